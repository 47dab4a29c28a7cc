import Foundation
import Logging
import RecBenchCore
import RecBenchBench

/// Threads by measurement (issue 18): each learned model's phases timed under every
/// `thread_split` on this host, and `auto`'s choice per phase checked against the faster.
extension Bench {
    /// One run's phases: mean training pass per epoch, mean validation pass, final evaluation.
    struct PhaseSeconds {
        let training: Double, validation: Double, evaluation: Double

        init(_ result: RunResult) {
            let epochs = result.training?.epochs ?? []
            let passes = epochs.compactMap(\.validSeconds)
            training = epochs.map { $0.seconds - ($0.validSeconds ?? 0) }.reduce(0, +) / Double(max(1, epochs.count))
            validation = passes.reduce(0, +) / Double(max(1, passes.count))
            evaluation = (result.seconds["evaluate_valid"] ?? 0) + (result.seconds["evaluate_test"] ?? 0)
        }

        subscript(phase: String) -> Double {
            phase == "training pass" ? training : phase == "validation pass" ? validation : evaluation
        }
    }

    /// For each learned model, a fixed 10 epochs under `thread_split: workers` and `blas`
    /// (best of `learnedRuns` each), then one row per phase: the time under the split `auto`
    /// uses for it, against the other split's (≤ 1.05×: auto is the faster, up to noise).
    func threadSplitRows(_ reference: BenchmarkReference, logger: Logger) throws -> [BenchmarkRow] {
        let assignments = learnedAssignments(reference) + ["epochs=10", "stopping_step=10"]
        var rows: [BenchmarkRow] = []
        for model in threadSplitModels.split(separator: ",").map(String.init) {
            logger.notice("\(model): 10 epochs under thread_split workers and blas, best of \(learnedRuns) each")
            var measured: [ThreadSplit: PhaseSeconds] = [:]
            for split in [ThreadSplit.workers, .blas] {
                measured[split] = PhaseSeconds(try bestRun(model, assignments + ["thread_split=\(split.rawValue)"]).result)
            }
            let phases: [(name: String, phase: ThreadSplit.Phase)] = [
                ("training pass", .training), ("validation pass", .training), ("final evaluation", .evaluation),
            ]
            for (name, phase) in phases {
                let chosen: ThreadSplit = ThreadSplit.auto.blasOnEveryThread(in: phase) ? .blas : .workers
                let other: ThreadSplit = chosen == .workers ? .blas : .workers
                rows.append(BenchmarkRow(step: "\(model) \(name) under `auto` (= \(chosen.rawValue) here)",
                                         seconds: measured[chosen]![name], reference: "the same under thread_split: \(other.rawValue), this run",
                                         referenceSeconds: measured[other]![name], target: 1.05))
            }
        }
        return rows
    }
}
