import Foundation
import RecBenchSupport
import RecBenchData

/// One trial of a search, stored atomically when it ends: its values, its validation curve,
/// its objective and why it ended. A trial without a record did not happen (a killed search
/// runs it again).
public struct TrialRecord: Codable, Sendable {
    /// Why a trial ended.
    public enum State: String, Codable, Sendable {
        /// Trained to the end (epochs or early stopping) and validated.
        case finished
        /// Ended by the pruner: its validation curve was below the median of earlier trials.
        case pruned
        /// The values were refused or training failed (`error` says why).
        case failed
    }

    /// One validation of the trial's training.
    public struct Point: Codable, Sendable, Equatable {
        public let epoch: Int
        public let valid: Double

        public init(epoch: Int, valid: Double) { self.epoch = epoch; self.valid = valid }
    }

    public var recbenchVersion = RecBenchRuns.recbenchVersion
    public var searchKey: String
    public var number: Int
    public var model: String
    public var state: State
    public var values: [String: ConfigValue]
    /// `valid_metric` and its best value (the objective; nil when the trial failed).
    public var validMetric: String
    public var objective: Double?
    public var curve: [Point]
    public var error: String?
    /// The run key of the trial's config; a later trial with the same key reuses this one.
    public var runKey: String?
    /// The earlier trial whose result this one reused (same values, same run).
    public var sameAs: Int?
    public var seconds: Double
    public var finishedAt: String
    /// `--shard i/N` of the process that ran it.
    public var shard: String?

    /// A trial record.
    public init(searchKey: String, number: Int, model: String, state: State, values: [String: ConfigValue], validMetric: String, objective: Double?,
                curve: [Point], error: String?, runKey: String?, sameAs: Int?, seconds: Double, finishedAt: String, shard: String?) {
        self.searchKey = searchKey; self.number = number; self.model = model; self.state = state; self.values = values
        self.validMetric = validMetric; self.objective = objective; self.curve = curve; self.error = error; self.runKey = runKey
        self.sameAs = sameAs; self.seconds = seconds; self.finishedAt = finishedAt; self.shard = shard
    }

    enum CodingKeys: String, CodingKey {
        case recbenchVersion = "recbench_version", searchKey = "search_key", number, model, state, values, validMetric = "valid_metric"
        case objective, curve, error, runKey = "run_key", sameAs = "same_as", seconds, finishedAt = "finished_at", shard
    }
}

/// The folder of one search: `results_dir/<dataset>/tune/<model>-<search key>/`, holding
/// `search.json` (what is searched) and `trial-NNNNN.json` per trial. Shards of a search
/// share it; each reads every stored trial before proposing.
public struct TrialStore: Sendable {
    public let folder: String
    public let searchKey: String

    public init(root: String, dataset: String, model: String, searchKey: String) {
        self.searchKey = searchKey
        folder = "\(root)/\(dataset)/\(RunFiles.searchFolder)/\(model)-\(searchKey.prefix(16))"
    }

    public func path(ofTrial number: Int) -> String { "\(folder)/trial-\(String(format: "%05d", number)).json" }

    /// Whether trial `number` has ended (a record exists).
    public func hasTrial(_ number: Int) -> Bool { FileManager.default.fileExists(atPath: path(ofTrial: number)) }

    /// Every stored trial, by number.
    public func trials() throws -> [TrialRecord] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return try names.filter { $0.hasPrefix("trial-") && $0.hasSuffix(".json") }.sorted().map { name in
            let path = "\(folder)/\(name)"
            guard let data = FileManager.default.contents(atPath: path) else { throw RecBenchError.file(path, "cannot be read") }
            do { return try JSONDecoder().decode(TrialRecord.self, from: data) } catch {
                throw RecBenchError.file(path, "is not a recbench trial record (\(error))")
            }
        }
    }

    /// Stores `trial` atomically.
    public func save(_ trial: TrialRecord) throws {
        try AtomicWrite.write(try ResultStore.encode(trial), to: path(ofTrial: trial.number))
    }

    /// Writes `search.json` (what the search is) unless it exists.
    public func describe(_ description: [String: ConfigValue]) throws {
        let path = "\(folder)/search.json"
        guard !FileManager.default.fileExists(atPath: path) else { return }
        try AtomicWrite.write(try ResultStore.encode(description), to: path)
    }
}

/// Decides, after each validation of a trial, whether the trial stops there.
public protocol TrialPruner: Sendable {
    /// The name recorded with the search (`median`, `halving`).
    var name: String { get }
    /// Whether a trial validated at `epoch` (its last validation before at `previous`) with best
    /// value `best` should stop, given the earlier trials.
    func shouldPrune(epoch: Int, previous: Int, best: Double, biggerIsBetter: Bool, earlier: [TrialRecord]) -> Bool
}

/// Optuna's median pruner: once `startupTrials` trials have finished, a trial whose best
/// validation value at epoch e (from `warmupEpochs` on) is worse than the median of the
/// finished trials' values at e stops there.
public struct MedianPruner: TrialPruner {
    /// "median", with its warm-up when that is not the default 5 epochs.
    public var name: String { warmupEpochs == 5 ? "median" : "median from epoch \(warmupEpochs)" }
    public var startupTrials = 5
    public var warmupEpochs = 5

    public init(startupTrials: Int = 5, warmupEpochs: Int = 5) { self.startupTrials = startupTrials; self.warmupEpochs = warmupEpochs }

    /// Whether a trial at `epoch` with best value `best` should stop, given the earlier trials
    /// (every trial validates at the same epochs, so `previous` does not matter here).
    public func shouldPrune(epoch: Int, previous: Int, best: Double, biggerIsBetter: Bool, earlier: [TrialRecord]) -> Bool {
        let finished = earlier.filter { $0.state == .finished }
        guard epoch >= warmupEpochs, finished.count >= startupTrials else { return false }
        let others = finished.compactMap { trial in trial.curve.first { $0.epoch == epoch }?.valid }.sorted()
        guard !others.isEmpty else { return false }
        let n = others.count, median = n % 2 == 1 ? others[n / 2] : (others[n / 2 - 1] + others[n / 2]) / 2
        return biggerIsBetter ? best < median : best > median
    }
}

/// Asynchronous successive halving (Li et al. 2020, as Optuna's `SuccessiveHalvingPruner`):
/// rungs at epochs r, r·η, r·η², …; a trial reaching a rung goes on only if its best value so
/// far is among the top ⌊n / η⌋ (at least one) of the n trials that reached that rung, itself
/// included. Promotion needs no finished trial, so it prunes from the second trial on. A trial
/// validated every few epochs (`eval_step`) reaches a rung at its first validation on or past
/// it, and is compared there with the others' best values up to that epoch.
public struct HalvingPruner: TrialPruner {
    /// "halving", with its first rung when that is not the default epoch 5.
    public var name: String { minimumEpochs == 5 ? "halving" : "halving from epoch \(minimumEpochs)" }
    public var minimumEpochs = 5
    public var reduction = 3

    public init(minimumEpochs: Int = 5, reduction: Int = 3) { self.minimumEpochs = minimumEpochs; self.reduction = reduction }

    /// Whether a rung lies in previous + 1 ... epoch (the epochs since the last validation).
    func passesRung(_ epoch: Int, since previous: Int) -> Bool {
        var rung = minimumEpochs
        while rung <= previous { rung *= reduction }
        return rung <= epoch
    }

    public func shouldPrune(epoch: Int, previous: Int, best: Double, biggerIsBetter: Bool, earlier: [TrialRecord]) -> Bool {
        guard passesRung(epoch, since: previous) else { return false }
        // Every earlier trial that reached the rung, at its best value up to the rung.
        let others = earlier.filter { $0.state != .failed && ($0.curve.last?.epoch ?? 0) >= epoch }.compactMap { trial in
            trial.curve.filter { $0.epoch <= epoch }.map(\.valid).max(by: { biggerIsBetter ? $0 < $1 : $0 > $1 })
        }
        let promoted = max(1, (others.count + 1) / reduction)
        let better = others.filter { biggerIsBetter ? $0 > best : $0 < best }.count
        return better >= promoted
    }
}
