import RecBenchSupport
import RecBenchData
import RecBenchContract
import RecBenchEvaluation
import RecBenchModels
/// Records that a run failed, so the report can show it; retried when the sweep reruns.
public struct FailedRun: Codable, Sendable {
    public var status = "failed"
    public var recbenchVersion: String
    public var model: String
    public var dataset: String
    public var runKey: String
    public var label: String
    public var error: String
    public var finishedAt: String
    /// Set by the report (not stored): a later run of the same model on the same dataset, with
    /// other settings, succeeded (a config fixed after this failure, typically).
    public var rerunSince = false

    public init(model: String, dataset: String, runKey: String, label: String, error: String, finishedAt: String) {
        self.recbenchVersion = RecBenchRuns.recbenchVersion
        self.model = model; self.dataset = dataset; self.runKey = runKey; self.label = label
        self.error = error; self.finishedAt = finishedAt
    }

    enum CodingKeys: String, CodingKey {
        case status, recbenchVersion = "recbench_version", model, dataset, runKey = "run_key", label, error
        case finishedAt = "finished_at"
    }
}
