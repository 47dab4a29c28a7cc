import Foundation
import RecBenchContract
import RecBenchEvaluation

/// What a run keeps of its fit's validation passes, each ranked at the run's full evaluation
/// settings: the latest pass, and the pass of the epoch the trainer last called an improvement.
/// That best pass, summarised, is the run's valid result: its parameters are the ones the fit
/// keeps, so evaluating them again would repeat the same pass (RecBole 1.2.1 likewise reports
/// its fit's best validation). Two passes at most are held: the best and the one being ranked.
final class ValidationLog: @unchecked Sendable {   // the passes guarded by `lock`
    private let lock = NSLock()
    private var latest: (score: Double, pass: RankedPass)?
    private var best: (epoch: Int, score: Double, pass: RankedPass)?
    private var count = 0

    /// Records one validation pass and its score.
    func record(score: Double, pass: RankedPass) {
        lock.withLock { latest = (score, pass); count += 1 }
    }

    /// Promotes the latest pass when the trainer's report calls its epoch an improvement, and
    /// lets it go either way.
    func epochEnded(_ report: EpochReport) {
        lock.withLock {
            if report.improved, let latest, report.validScore == latest.score { best = (report.epoch, latest.score, latest.pass) }
            latest = nil
        }
    }

    /// Takes the pass of `summary`'s best epoch (with the epoch), emptying the log; nil when the
    /// fit kept no best epoch or when the log and the summary disagree (another count of
    /// passes, epoch or score; a fit that continued a saved state validated only its own epochs
    /// here), so the caller evaluates the fitted model instead.
    func takeBestPass(of summary: TrainingSummary?) -> (epoch: Int, pass: RankedPass)? {
        lock.withLock {
            defer { best = nil; latest = nil }
            guard let summary, let kept = summary.bestValid, let best, best.epoch == summary.bestEpoch, best.score == kept,
                  count == summary.epochs.count(where: { $0.valid != nil && $0.epoch > summary.resumedAfter ?? 0 }) else { return nil }
            return (best.epoch, best.pass)
        }
    }
}
