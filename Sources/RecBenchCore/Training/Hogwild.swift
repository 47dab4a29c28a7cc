import Synchronization
import Linalg

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
        let slices = max(1, min(workers, count))
        var results = [Double](repeating: 0, count: slices)
        results.withUnsafeMutableBufferPointer { out in
            let shared = UnsafeShared(out.baseAddress!)   // one result slot per slice
            Compute(threads: slices).forEachChunk(count: slices, chunkSize: 1) { range in
                let slice = range.lowerBound
                var rng = SeededGenerator(seed: seed, stream: UInt64(epoch) << 16 | UInt64(slice) << 8 | 0x40)
                shared.value[slice] = body((slice * count / slices)..<((slice + 1) * count / slices), &rng)
            }
        }
        return results.reduce(0, +)
    }
}

/// A float matrix that several threads read and write at once without locks. Storage is
/// relaxed atomics of two floats each: concurrent updates may overwrite one another
/// (Hogwild! accepts that) but never tear, and the program has no data race. On x86-64 and
/// arm64 a relaxed atomic load or store is an ordinary load or store.
public final class SharedMatrix: @unchecked Sendable {   // all access goes through the atomics
    public let rows: Int, columns: Int
    private let pairsPerRow: Int
    private let storage: UnsafeMutablePointer<Atomic<UInt64>>

    /// A shared copy of `matrix`.
    public init(_ matrix: Matrix) {
        rows = matrix.rows; columns = matrix.columns
        pairsPerRow = (columns + 1) / 2
        storage = .allocate(capacity: max(1, rows * pairsPerRow))
        for r in 0..<rows {
            for k in 0..<pairsPerRow {
                let low = matrix.values[r * columns + 2 * k].bitPattern
                let high = 2 * k + 1 < columns ? matrix.values[r * columns + 2 * k + 1].bitPattern : 0
                (storage + r * pairsPerRow + k).initialize(to: Atomic(UInt64(low) | UInt64(high) << 32))
            }
        }
    }

    deinit {
        storage.deinitialize(count: rows * pairsPerRow)
        storage.deallocate()
    }

    /// Copies row `r` into `buffer`, which must hold an even number of floats ≥ `columns`.
    @inline(__always)
    public func read(row r: Int, into buffer: UnsafeMutablePointer<Float>) {
        let source = storage + r * pairsPerRow
        let target = UnsafeMutableRawPointer(buffer)
        for k in 0..<pairsPerRow { target.storeBytes(of: source[k].load(ordering: .relaxed), toByteOffset: 8 * k, as: UInt64.self) }
    }

    /// Overwrites row `r` with `buffer` (an even number of floats ≥ `columns`).
    @inline(__always)
    public func write(row r: Int, from buffer: UnsafePointer<Float>) {
        let target = storage + r * pairsPerRow
        let source = UnsafeRawPointer(buffer)
        for k in 0..<pairsPerRow { target[k].store(source.loadUnaligned(fromByteOffset: 8 * k, as: UInt64.self), ordering: .relaxed) }
    }

    /// A snapshot as a plain matrix.
    public var matrix: Matrix {
        var values = [Float](repeating: 0, count: rows * columns)
        withUnsafeTemporaryAllocation(of: Float.self, capacity: 2 * pairsPerRow) { row in
            for r in 0..<rows {
                read(row: r, into: row.baseAddress!)
                for c in 0..<columns { values[r * columns + c] = row[c] }
            }
        }
        return Matrix(rows: rows, columns: columns, values: values)
    }
}
