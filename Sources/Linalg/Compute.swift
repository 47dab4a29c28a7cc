import Foundation

/// How much of the machine one computation may use, passed down explicitly from the run
/// (its `threads` key) through fitting and evaluation: there is no process-wide knob.
///
/// recbench's own parallel loops use up to `workers` threads; each BLAS or LAPACK call runs
/// with `blasThreads` OpenBLAS threads. With one OpenBLAS thread and several workers, large
/// products are split over the workers instead (training does this: idle OpenBLAS threads
/// busy-wait between calls and would take a core from the training loop). Chunked loops
/// give the same result for any worker count; split products round differently at block
/// borders, so results depend on `Compute`, and runs record it.
public struct Compute: Sendable, Equatable, CustomStringConvertible {
    /// Most threads recbench's parallel loops use (1: chunks run in order on the caller).
    public let workers: Int
    /// OpenBLAS threads per BLAS or LAPACK call.
    public let blasThreads: Int

    /// `threads` workers and as many OpenBLAS threads per call.
    public init(threads: Int) { self.init(workers: threads, blasThreads: threads) }

    /// Workers and OpenBLAS threads set apart.
    public init(workers: Int, blasThreads: Int) {
        self.workers = max(1, workers)
        self.blasThreads = max(1, blasThreads)
    }

    /// Everything on the calling thread.
    public static let serial = Compute(threads: 1)

    /// Every core of this machine, for recbench's loops and for OpenBLAS.
    public static var allCores: Compute { Compute(threads: coreCount) }

    /// The cores of this machine, read once: Foundation asks the kernel on every call (a
    /// syscall per GEMM was 7 % of a NeuMF run).
    public static let coreCount = ProcessInfo.processInfo.activeProcessorCount

    /// The same workers with one OpenBLAS thread per call (large products split over the workers).
    public var splittingProducts: Compute { Compute(workers: workers, blasThreads: 1) }

    /// Whether large products are split over the workers (one OpenBLAS thread per call,
    /// more than one worker running).
    public var splitsProducts: Bool { blasThreads == 1 && activeWorkers > 1 }

    /// The threads that actually run at once: never more than the cores.
    public var activeWorkers: Int { min(workers, Compute.coreCount) }

    public var description: String { "\(workers) workers, \(blasThreads) BLAS threads" }

    /// Calls `body` once per chunk of `0..<count`, chunks of `chunkSize` (the last may be
    /// shorter), on up to `workers` threads. Chunk boundaries depend only on the count and the
    /// chunk size, never on the workers, so work split this way gives the same result on any
    /// machine. Returns when every chunk is done.
    public func forEachChunk(count: Int, chunkSize: Int, _ body: @Sendable (Range<Int>) -> Void) {
        precondition(chunkSize > 0, "forEachChunk: chunkSize must be positive")
        guard count > 0 else { return }
        let chunks = (count + chunkSize - 1) / chunkSize
        if chunks == 1 || workers <= 1 {
            for chunk in 0..<chunks {
                let start = chunk * chunkSize
                body(start..<min(count, start + chunkSize))
            }
            return
        }
        WorkerPool.shared.run(count: chunks, helpers: activeWorkers - 1) { chunk in
            let start = chunk * chunkSize
            body(start..<min(count, start + chunkSize))
        }
    }

    /// `body` of each chunk of `0..<count` (as `forEachChunk` cuts them), in chunk order.
    public func mapChunks<T: Sendable>(count: Int, chunkSize: Int, _ body: @Sendable (Range<Int>) -> T) -> [T] {
        var results = [T?](repeating: nil, count: (count + chunkSize - 1) / chunkSize)
        results.withUnsafeMutableBufferPointer { slots in
            let shared = UnsafeShared(slots.baseAddress!)   // one slot per chunk, written by its worker only
            forEachChunk(count: count, chunkSize: chunkSize) { range in shared.value[range.lowerBound / chunkSize] = body(range) }
        }
        return results.map { $0! }
    }
}
