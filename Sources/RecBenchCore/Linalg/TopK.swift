/// Per-row partial top-K selection: a size-K min-heap per row, so a row of n scores costs
/// O(n + m log K) (m = heap replacements) and is never fully sorted.
///
/// Order: higher score first; equal scores go to the lower column index, which makes the
/// selection deterministic. Entries that are `-infinity` (masked) or NaN are never selected,
/// so a row may yield fewer than K items.
public enum TopK {
    /// The best `k` columns of one row, best first.
    public static func select(_ row: UnsafeBufferPointer<Float>, k: Int) -> [Int32] {
        var out = [Int32](repeating: 0, count: k)
        let n = out.withUnsafeMutableBufferPointer { select(row, k: k, into: $0.baseAddress!) }
        return Array(out[0..<n])
    }

    /// Writes the best `k` columns of `row`, best first, to `output`; returns how many
    /// were written (less than `k` when fewer selectable entries exist).
    public static func select(_ row: UnsafeBufferPointer<Float>, k: Int, into output: UnsafeMutablePointer<Int32>) -> Int {
        guard k > 0 else { return 0 }
        return withUnsafeTemporaryAllocation(of: Float.self, capacity: k) { hs in
            withUnsafeTemporaryAllocation(of: Int32.self, capacity: k) { hi in
                selectWithHeap(row, k: k, scores: hs, items: hi, into: output)
            }
        }
    }

    /// The heap walk of `select`, over caller-provided heap storage of capacity `k`.
    private static func selectWithHeap(
        _ row: UnsafeBufferPointer<Float>, k: Int,
        scores hs: UnsafeMutableBufferPointer<Float>, items hi: UnsafeMutableBufferPointer<Int32>,
        into output: UnsafeMutablePointer<Int32>
    ) -> Int {
        // (hs, hi) is a min-heap on "worse": lower score, or equal score and higher index.
        var size = 0
        @inline(__always) func worse(_ a: Int, _ b: Int) -> Bool {
            hs[a] < hs[b] || (hs[a] == hs[b] && hi[a] > hi[b])
        }
        func siftDown(_ start: Int) {
            var i = start
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < size && worse(l, m) { m = l }
                if r < size && worse(r, m) { m = r }
                if m == i { return }
                hs.swapAt(i, m); hi.swapAt(i, m)
                i = m
            }
        }
        @inline(__always) func offer(_ j: Int) {
            let s = row[j]
            // NaN fails every comparison and -inf marks a masked item: skip both.
            guard s > -Float.infinity else { return }
            if size < k {
                var i = size
                hs[i] = s; hi[i] = Int32(j)
                size += 1
                while i > 0 {
                    let p = (i - 1) / 2
                    if worse(i, p) { hs.swapAt(i, p); hi.swapAt(i, p); i = p } else { break }
                }
            } else if s > hs[0] {
                // Indices ascend during the scan, so an equal score never beats the root.
                hs[0] = s; hi[0] = Int32(j)
                siftDown(0)
            }
        }
        var j = 0
        while j < row.count && size < k { offer(j); j += 1 }
        // Once the heap is full, most scores lose to its root: test eight at a time and
        // offer only the vectors that hold a candidate, in index order.
        if let base = row.baseAddress {
            while j + 8 <= row.count {
                let v = UnsafeRawPointer(base + j).loadUnaligned(as: Lanes.self)
                if any(v .> Lanes(repeating: hs[0])) { for l in j..<(j + 8) { offer(l) } }
                j += 8
            }
        }
        while j < row.count { offer(j); j += 1 }
        let selected = size
        // Pop worst first into the tail of the output, leaving it best first.
        while size > 0 {
            output[size - 1] = hi[0]
            size -= 1
            hs[0] = hs[size]; hi[0] = hi[size]
            siftDown(0)
        }
        return selected
    }

    /// Selects the best `k` columns of every row of `scores` in parallel. Returns a
    /// `rows × k` row-major index array and the count selected per row.
    public static func select(_ scores: Matrix, k: Int) -> (items: [Int32], counts: [Int]) {
        var items = [Int32](repeating: -1, count: scores.rows * k)
        var counts = [Int](repeating: 0, count: scores.rows)
        guard k > 0 else { return (items, counts) }
        let n = scores.columns
        scores.values.withUnsafeBufferPointer { sp in
            items.withUnsafeMutableBufferPointer { ip in
                counts.withUnsafeMutableBufferPointer { cp in
                    // Each worker writes only its own rows of items and counts.
                    let shared = UnsafeShared((sp.baseAddress!, ip.baseAddress!, cp.baseAddress!))
                    Parallel.forEachChunk(count: scores.rows, chunkSize: 32) { range in
                        let (s, i, c) = shared.value
                        for r in range {
                            c[r] = select(UnsafeBufferPointer(start: s + r * n, count: n), k: k, into: i + r * k)
                        }
                    }
                }
            }
        }
        return (items, counts)
    }
}
