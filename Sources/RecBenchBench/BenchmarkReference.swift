import Foundation
import RecBenchCore

/// What `recbench bench` compares with, read from a YAML file (`Configs/bench/`): another
/// tool's measured walls and epochs, the machine's measured peaks, and the targets. Data,
/// not code, so a new measurement is an edit to that file.
public struct BenchmarkReference: Sendable {
    /// One model's reference run.
    public struct Model: Sendable {
        /// Process wall seconds (NaN when the reference has none: a model only compared with RecBole run here).
        public let wall: Double
        /// Peak RSS in MiB, when measured.
        public let rss: Double?
        /// Epochs the reference run trained (learned models).
        public let epochs: Int?
        /// The speed-up recbench should reach (reference wall / recbench wall).
        public let speedup: Double?
        /// The whole-process seconds recbench should stay under.
        public let wallTarget: Double?
        /// Training examples per second on one worker (Item2vec: pairs), when measured.
        public let examplesPerSecond: Double?
        /// Hyperparameters the reference ran with, as `--set key=value` assignments.
        public let settings: [String]
        /// What the wall is, when it is not the model's own reference run.
        public let label: String?
        /// The speed-up recbench should reach over RecBole run back to back on this host.
        public let sameRunSpeedup: Double?
    }

    /// Folder of the reference's own split, relative to the file's repository root.
    public let recboleSplit: String?
    /// RecBole's runner script and the raw data it splits itself, for side-by-side runs.
    public let recboleRunner: String?, recboleData: String?
    /// sgemm peak, FLOP/s: the file's (BLAS-NOTES), or this host's once measured.
    public private(set) var sgemmPeak: Double
    /// Where `sgemmPeak` comes from, for row labels.
    public private(set) var sgemmPeakSource = "BLAS-NOTES'"
    /// spotrf + spotri rate, n³ / seconds.
    public let choleskyInverseRate: Double
    /// Copy bandwidth, bytes/s (read + write), when stated.
    public let copyBandwidth: Double?
    /// Reference runs by model name.
    public let models: [String: Model]

    /// Reads the reference file at `path`.
    public init(path: String) throws {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw RecBenchError.file(path, "cannot be read") }
        guard case .map(let top) = try ConfigValue.parse(yaml: text) else { throw RecBenchError.file(path, "expected a YAML map") }
        func number(_ v: ConfigValue?, _ key: String) throws -> Double {
            guard let d = v?.doubleValue else { throw RecBenchError.file(path, field: key, "expected a number") }
            return d
        }
        recboleSplit = top["recbole_split"]?.stringValue
        recboleRunner = top["recbole_runner"]?.stringValue
        recboleData = top["recbole_data"]?.stringValue
        sgemmPeak = try number(top["sgemm_peak_gflops"], "sgemm_peak_gflops") * 1e9
        choleskyInverseRate = try number(top["cholesky_inverse_gflops"], "cholesky_inverse_gflops") * 1e9
        copyBandwidth = top["copy_bandwidth_gbs"]?.doubleValue.map { $0 * 1e9 }
        guard case .map(let entries)? = top["models"] else { throw RecBenchError.file(path, field: "models", "expected a map of models") }
        models = try entries.mapValues { entry in
            guard case .map(let m) = entry else { throw RecBenchError.file(path, field: "models", "expected a map per model") }
            return Model(wall: m["wall"] == nil ? .nan : try number(m["wall"], "wall"), rss: m["rss"]?.doubleValue, epochs: m["epochs"]?.intValue,
                         speedup: m["speedup"]?.doubleValue, wallTarget: m["wall_target"]?.doubleValue,
                         examplesPerSecond: m["pairs_per_second"]?.doubleValue,
                         settings: m["settings"].flatMap { v in
                             guard case .map(let pairs) = v else { return nil }
                             return pairs.keys.sorted().map { "\($0)=\(pairs[$0]!)" }
                         } ?? [], label: m["label"]?.stringValue, sameRunSpeedup: m["same_run_speedup"]?.doubleValue)
        }
    }

    /// This reference with the sgemm peak measured on this host in this run.
    public func withSgemmPeak(measured flops: Double) -> BenchmarkReference {
        var copy = self
        copy.sgemmPeak = flops
        copy.sgemmPeakSource = "this run's"
        return copy
    }

    /// "this run's 267 GFLOP/s sgemm peak", for row labels.
    public var sgemmPeakLabel: String { "\(sgemmPeakSource) \(Int(sgemmPeak / 1e9)) GFLOP/s sgemm peak" }

    /// The models with a reference entry, by name.
    public var modelNames: [String] { models.keys.sorted() }

    /// The entry for `model`, or an error naming the file's missing entry.
    public func model(_ name: String) throws -> Model {
        guard let m = models[name] else { throw RecBenchError(field: name, "no reference run for this model in the benchmark reference file") }
        return m
    }
}
