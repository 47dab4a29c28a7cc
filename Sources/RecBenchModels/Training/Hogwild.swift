import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// Lock-free parallel SGD (Hogwild!, Niu et al. 2011; the `implicit` library's BPR): workers
/// take disjoint slices of an epoch's samples and update shared parameters without locks.
/// Sparse updates rarely collide, and a collision only loses part of one update.
///
/// With one worker the slices run in order on the calling thread and the result is
/// reproducible; with more, which update lands first depends on timing, so reruns agree
/// only statistically.
public enum Hogwild {
    /// Splits `0..<count` into one contiguous slice per worker and runs them concurrently.
    /// Each slice gets its own random stream for (seed, epoch, slice). Returns the sum of the
    /// slices' results, added in slice order.
    public static func run(
        count: Int, workers: Int, seed: UInt64, epoch: Int,
        _ body: @Sendable (Range<Int>, inout SeededGenerator) -> Double
    ) -> Double {
        slices(count: count, workers: workers, seed: seed, epoch: epoch, body).reduce(0, +)
    }

    /// As `run`, returning each slice's result, in slice order.
    public static func slices<Result: Sendable>(
        count: Int, workers: Int, seed: UInt64, epoch: Int,
        _ body: @Sendable (Range<Int>, inout SeededGenerator) -> Result
    ) -> [Result] {
        let slices = max(1, min(workers, count))
        var results = [Result?](repeating: nil, count: slices)
        results.withUnsafeMutableBufferPointer { out in
            let shared = UnsafeShared(out.baseAddress!)   // one result slot per slice
            Compute(threads: slices).forEachChunk(count: slices, chunkSize: 1) { range in
                let slice = range.lowerBound
                var rng = SeededGenerator(seed: seed, stream: UInt64(epoch) << 16 | UInt64(slice) << 8 | 0x40)
                shared.value[slice] = body((slice * count / slices)..<((slice + 1) * count / slices), &rng)
            }
        }
        return results.map { $0! }
    }
}

/// A float matrix that several threads read and write at once without locks, as Hogwild!
/// prescribes and as word2vec, gensim and `implicit` do: plain aligned float loads and
/// stores, so concurrent updates of one row may overwrite one another (a lost part of one
/// update, which Hogwild! accepts) but a float is never torn and no access leaves the
/// buffer. Rows are used in place (`row(_:)`) or through a local copy (`read` / `write`).
public final class SharedMatrix: @unchecked Sendable {   // shared on purpose: see above
    public let rows: Int, columns: Int
    /// Floats from one row to the next: rows start on 64-byte cache lines, so two threads
    /// updating neighbouring rows never write the same line (false sharing).
    private let stride: Int
    private let storage: UnsafeMutablePointer<Float>

    /// A shared copy of `matrix`.
    public init(_ matrix: Matrix) {
        rows = matrix.rows; columns = matrix.columns
        stride = (columns + 15) / 16 * 16
        storage = UnsafeMutableRawPointer.allocate(byteCount: max(1, rows * stride) * 4, alignment: 64)
            .bindMemory(to: Float.self, capacity: max(1, rows * stride))
        storage.initialize(repeating: 0, count: max(1, rows * stride))
        matrix.values.withUnsafeBufferPointer { values in
            for r in 0..<rows { (storage + r * stride).update(from: values.baseAddress! + r * columns, count: columns) }
        }
    }

    deinit { storage.deallocate() }

    /// Row `r`, in place (other threads may be writing it).
    @inline(__always)
    public func row(_ r: Int) -> UnsafeMutablePointer<Float> { storage + r * stride }

    /// Copies row `r` into `buffer` (at least `columns` floats).
    @inline(__always)
    public func read(row r: Int, into buffer: UnsafeMutablePointer<Float>) {
        buffer.update(from: storage + r * stride, count: columns)
    }

    /// Overwrites row `r` with `buffer` (at least `columns` floats).
    @inline(__always)
    public func write(row r: Int, from buffer: UnsafePointer<Float>) {
        (storage + r * stride).update(from: buffer, count: columns)
    }

    /// A snapshot as a plain matrix.
    public var matrix: Matrix {
        var values = [Float](repeating: 0, count: rows * columns)
        values.withUnsafeMutableBufferPointer { out in
            for r in 0..<rows { (out.baseAddress! + r * columns).update(from: storage + r * stride, count: columns) }
        }
        return Matrix(rows: rows, columns: columns, values: values)
    }
}
