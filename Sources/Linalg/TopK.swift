import CLanes

/// Per-row partial top-K selection by filtering: scan the row eight scores at a time against
/// a floor (CLanes' movemask scan), append the few that beat it to a buffer of 4K candidates, and when the buffer
/// fills keep its best K (a quickselect) and raise the floor to the K-th of them. A row of
/// n scores costs O(n) and is never fully sorted; only the final K are.
///
/// Order: higher score first; equal scores go to the lower column index, which makes the
/// selection deterministic. Entries that are `-infinity` (masked) or NaN are never selected,
/// so a row may yield fewer than K items.
public enum TopK {
    /// The best `k` columns of one row, best first.
    public static func select(_ row: UnsafeBufferPointer<Float>, k: Int, kernels: KernelSet = .current) -> [Int32] {
        var out = [Int32](repeating: 0, count: k)
        let n = out.withUnsafeMutableBufferPointer { select(row, k: k, into: $0.baseAddress!, kernels: kernels) }
        return Array(out[0..<n])
    }

    /// Writes the best `k` columns of `row`, best first, to `output`; returns how many
    /// were written (less than `k` when fewer selectable entries exist).
    public static func select(_ row: UnsafeBufferPointer<Float>, k: Int, into output: UnsafeMutablePointer<Int32>,
                              kernels: KernelSet = .current) -> Int {
        guard k > 0, let base = row.baseAddress else { return 0 }
        let capacity = max(4 * k, 64)
        return withUnsafeTemporaryAllocation(of: Float.self, capacity: capacity) { scores in
            withUnsafeTemporaryAllocation(of: Int32.self, capacity: capacity) { items in
                let candidates = Candidates(scores: scores.baseAddress!, items: items.baseAddress!)
                return candidates.select(base, count: row.count, k: k, capacity: capacity, into: output, kernels: kernels)
            }
        }
    }

    /// The candidate buffer of one selection: parallel arrays of scores and columns.
    private struct Candidates {
        let scores: UnsafeMutablePointer<Float>
        let items: UnsafeMutablePointer<Int32>

        /// Whether candidate a ranks before candidate b.
        @inline(__always) func better(_ a: Int, _ b: Int) -> Bool {
            scores[a] > scores[b] || (scores[a] == scores[b] && items[a] < items[b])
        }

        @inline(__always) func swapAt(_ a: Int, _ b: Int) {
            (scores[a], scores[b]) = (scores[b], scores[a])
            (items[a], items[b]) = (items[b], items[a])
        }

        func select(_ row: UnsafePointer<Float>, count n: Int, k: Int, capacity: Int, into output: UnsafeMutablePointer<Int32>,
                    kernels: KernelSet) -> Int {
            // A candidate must beat the floor: first the block-maxima bound (−∞ for short
            // rows, which masked entries do not beat either); once the buffer has been cut to
            // its best K, the K-th of them, which a later equal score cannot beat (higher
            // index). NaN beats nothing.
            var floor = initialFloor(row, count: n, k: k, capacity: capacity, kernels: kernels)
            var count = 0, position = 0
            while position < n {
                count = kernels == .avx2
                    ? recbench_topk_scan_avx2(row, &position, n, floor, scores, items, count, capacity)
                    : recbench_topk_scan(row, &position, n, floor, scores, items, count, capacity)
                if count == capacity { floor = keepBest(k, of: count); count = k }
            }
            if k <= 64 {
                count = insertBest(k, of: count)
            } else {
                if count > k { _ = keepBest(k, of: count); count = k }
                sortBestFirst(count)
            }
            for r in 0..<count { output[r] = items[r] }
            return count
        }

        /// Moves the best `k` of the first `m` candidates to the front, best first, by
        /// insertion into a sorted prefix of at most k; returns how many it kept. The last
        /// cut of a row leaves a few dozen candidates, which one pass sorts in fewer
        /// comparisons and moves than a quickselect followed by a sort.
        func insertBest(_ k: Int, of m: Int) -> Int {
            var kept = 0
            for i in 0..<m {
                let score = scores[i], item = items[i]
                // Candidates skipped once the prefix is full leave garbage behind it, never in it.
                if kept == k && !(score > scores[k - 1] || (score == scores[k - 1] && item < items[k - 1])) { continue }
                var j = kept == k ? k - 1 : kept
                while j > 0 && (score > scores[j - 1] || (score == scores[j - 1] && item < items[j - 1])) {
                    scores[j] = scores[j - 1]; items[j] = items[j - 1]
                    j -= 1
                }
                scores[j] = score; items[j] = item
                if kept < k { kept += 1 }
            }
            return kept
        }

        /// A floor below the K-th best score, from one vectorised pass: deal the row's
        /// 8-lane vectors into interleaved sets (so a region of good scores, such as popular
        /// items numbered first, spreads over all of them) and take each set's lane-wise
        /// maximum; those maxima
        /// are distinct entries, so the K-th best of them is at most the row's K-th best.
        /// Entries equal to it must still pass, hence the next float down. −∞ when the row
        /// is too short for K groups. About 2K maxima, not more: selecting among them
        /// costs more than the scan, and fewer, larger sets have higher maxima, so the
        /// floor stays in the row's top few percent.
        func initialFloor(_ row: UnsafePointer<Float>, count n: Int, k: Int, capacity: Int, kernels: KernelSet) -> Float {
            let vectors = n / 8, blocks = min(vectors, capacity / 8, (2 * k + 7) / 8)
            guard blocks * 8 >= k, blocks > 0 else { return -.infinity }
            if kernels == .avx2 { recbench_block_maxima_avx2(row, n, blocks, scores) } else { recbench_block_maxima(row, n, blocks, scores) }
            // Counting costs m² compares: for the usual few dozen maxima that beats sorting them.
            guard blocks <= 8 else { return kthLargestScore(k, of: blocks * 8).nextDown }
            return (kernels == .avx2 ? recbench_kth_largest_avx2(scores, blocks * 8, k) : recbench_kth_largest(scores, blocks * 8, k)).nextDown
        }

        /// The k-th largest of the first `m` scores: each inserted into a descending prefix
        /// of at most k (m is about 2K; a quickselect's partitioning cost more here).
        func kthLargestScore(_ k: Int, of m: Int) -> Float {
            var kept = 0
            for i in 0..<m {
                let score = scores[i]
                if kept == k && !(score > scores[k - 1]) { continue }
                var j = kept == k ? k - 1 : kept
                while j > 0 && score > scores[j - 1] { scores[j] = scores[j - 1]; j -= 1 }
                scores[j] = score
                if kept < k { kept += 1 }
            }
            return scores[k - 1]
        }

        /// Moves the best `k` of the first `m` candidates to the front (a quickselect, pivot
        /// the median of three) and returns the K-th best score, which ends at index k − 1.
        func keepBest(_ k: Int, of m: Int) -> Float {
            var lo = 0, hi = m - 1
            while lo < hi {
                let mid = (lo + hi) / 2
                if better(hi, lo) { swapAt(hi, lo) }
                if better(mid, lo) { swapAt(mid, lo) }
                if better(hi, mid) { swapAt(hi, mid) }
                // lo ≥ mid ≥ hi in rank: the median (mid) becomes the pivot, parked at hi.
                swapAt(mid, hi)
                var store = lo
                for i in lo..<hi where better(i, hi) { swapAt(i, store); store += 1 }
                swapAt(store, hi)
                if store == k - 1 { break }
                if store < k - 1 { lo = store + 1 } else { hi = store - 1 }
            }
            return scores[k - 1]
        }

        /// Sorts the first `m` candidates best first (insertion sort: m is K, and small).
        func sortBestFirst(_ m: Int) {
            guard m > 1 else { return }
            if m > 64 {
                var order = Array(0..<m)
                order.sort { better($0, $1) }
                let s = order.map { scores[$0] }, it = order.map { items[$0] }
                for r in 0..<m { scores[r] = s[r]; items[r] = it[r] }
                return
            }
            for i in 1..<m {
                var j = i
                while j > 0 && better(j, j - 1) { swapAt(j, j - 1); j -= 1 }
            }
        }
    }

    /// Selects the best `k` columns of every row of `scores` in parallel. Returns a
    /// `rows × k` row-major index array and the count selected per row.
    public static func select(_ scores: Matrix, k: Int, compute: Compute) -> (items: [Int32], counts: [Int]) {
        var items = [Int32](repeating: -1, count: scores.rows * k)
        var counts = [Int](repeating: 0, count: scores.rows)
        guard k > 0 else { return (items, counts) }
        let n = scores.columns
        scores.values.withUnsafeBufferPointer { sp in
            items.withUnsafeMutableBufferPointer { ip in
                counts.withUnsafeMutableBufferPointer { cp in
                    // Each worker writes only its own rows of items and counts.
                    let shared = UnsafeShared((sp.baseAddress!, ip.baseAddress!, cp.baseAddress!))
                    compute.forEachChunk(count: scores.rows, chunkSize: 32) { range in
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
