import Dispatch
import Foundation

/// Wraps a value that is shared across threads under a discipline the compiler cannot check
/// (for example a pointer whose rows are written by disjoint workers). The one place the core
/// opts out of Sendable checking; every use must say why it is safe.
public struct UnsafeShared<Value>: @unchecked Sendable {
    /// The wrapped value.
    public let value: Value
    /// Wraps `value`.
    public init(_ value: Value) { self.value = value }
}

/// Fixed-size chunked parallel loops. Chunk boundaries depend only on the count and the
/// chunk size, never on the number of cores, so work split this way gives the same result
/// on any machine.
public enum Parallel {
    /// Most workers a loop may use (set once per run from the `threads` key, before any
    /// parallel work); 1 runs chunks in order on the calling thread. Chunking does not
    /// depend on it, so neither do results.
    nonisolated(unsafe) public static var workerLimit = ProcessInfo.processInfo.activeProcessorCount

    /// Calls `body` once per chunk of `0..<count`, chunks of `chunkSize` (the last may be
    /// shorter), on all cores. Returns when every chunk is done.
    public static func forEachChunk(
        count: Int, chunkSize: Int, _ body: @Sendable (Range<Int>) -> Void
    ) {
        precondition(chunkSize > 0, "Parallel.forEachChunk: chunkSize must be positive")
        guard count > 0 else { return }
        let chunks = (count + chunkSize - 1) / chunkSize
        if chunks == 1 || workerLimit <= 1 {
            for chunk in 0..<chunks {
                let start = chunk * chunkSize
                body(start..<min(count, start + chunkSize))
            }
            return
        }
        DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
            let start = chunk * chunkSize
            body(start..<min(count, start + chunkSize))
        }
    }
}
