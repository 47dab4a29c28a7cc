import Foundation
import RecBenchData

/// How a tuned run's hyperparameters were chosen, stored with its record: the search, what
/// its trials did, and the best trial's values.
public struct TuningRecord: Codable, Sendable, Equatable {
    /// The search's identity (its folder under `tune/`).
    public var searchKey: String
    /// Sampler and pruner (`tpe`, `random`; `median`, `none`).
    public var sampler: String, pruner: String
    /// The space in RecBole's line format.
    public var space: String
    /// Trials stored, and how many finished, were pruned or failed.
    public var trials: Int, finished: Int, pruned: Int, failed: Int
    /// The best finished trial, its values and validation metric.
    public var bestTrial: Int
    public var values: [String: ConfigValue]
    public var bestValid: Double
    /// Seconds the trials took together (the final run not included).
    public var searchSeconds: Double

    public init(searchKey: String, sampler: String, pruner: String, space: String, trials: Int, finished: Int, pruned: Int, failed: Int,
                bestTrial: Int, values: [String: ConfigValue], bestValid: Double, searchSeconds: Double) {
        self.searchKey = searchKey; self.sampler = sampler; self.pruner = pruner; self.space = space
        self.trials = trials; self.finished = finished; self.pruned = pruned; self.failed = failed
        self.bestTrial = bestTrial; self.values = values; self.bestValid = bestValid; self.searchSeconds = searchSeconds
    }

    /// "k=10, learning_rate=0.003437": values by key, floats to four significant digits.
    public static func describe(_ values: [String: ConfigValue], separator: String = ", ") -> String {
        values.keys.sorted().map { key in
            if case .double(let d) = values[key]! { return "\(key)=\(String(format: "%.4g", d))" }
            return "\(key)=\(values[key]!)"
        }.joined(separator: separator)
    }

    enum CodingKeys: String, CodingKey {
        case searchKey = "search_key", sampler, pruner, space, trials, finished, pruned, failed
        case bestTrial = "best_trial", values, bestValid = "best_valid", searchSeconds = "search_seconds"
    }
}
