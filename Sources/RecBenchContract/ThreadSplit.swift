import Linalg
import RecBenchSupport
import RecBenchData

/// How a run's threads are shared between OpenBLAS and recbench's own workers in each
/// phase (`thread_split`). OpenBLAS threads busy-wait between calls, so a training loop of
/// many small steps loses a core to them, while a large GEMM might gain from them.
/// `recbench bench --thread-splits` times every phase of the learned models under each
/// split on this host; `auto` is what those measurements chose, per phase (README,
/// Performance): on the 2-core machines recbench is measured on, the workers in every
/// phase (2026-11-25: final evaluations up to 1.33× faster than on OpenBLAS's own threads;
/// the losses were passes of 2 ms or less whose ratio swings run to run). It stays a name of its own so that
/// a host kind where the bench measures otherwise changes one line, not every config.
public enum ThreadSplit: String, Sendable, CaseIterable {
    /// The measured choice per phase (`blasOnEveryThread(in:)`).
    case auto
    /// Every phase on recbench's workers, one OpenBLAS thread per call.
    case workers
    /// Every phase with OpenBLAS on every thread (and recbench's loops on as many workers).
    case blas

    /// The phases a split treats apart.
    public enum Phase: String, Sendable, CaseIterable {
        /// Training passes and the validation pass after each epoch.
        case training
        /// The evaluations after the fit: test, and valid when the fit kept no validation pass.
        case evaluation
    }

    /// Whether OpenBLAS gets every thread in `phase` (else one, with products split over the workers).
    public func blasOnEveryThread(in phase: Phase) -> Bool {
        switch self {
        case .auto: return false   // bench --thread-splits, 2026-11-25: workers won or tied in 18 of 21 phases, lost by ≤ 0.4 ms in 3
        case .workers: return false
        case .blas: return true
        }
    }

    /// The threads of `phase`, out of the run's.
    public func compute(for phase: Phase, of compute: Compute) -> Compute {
        blasOnEveryThread(in: phase) ? compute : compute.splittingProducts
    }

    /// The threads of training: its passes and its validation passes.
    public func training(_ compute: Compute) -> Compute { self.compute(for: .training, of: compute) }

    /// The threads of the final valid and test evaluations.
    public func evaluation(_ compute: Compute) -> Compute { self.compute(for: .evaluation, of: compute) }
}
