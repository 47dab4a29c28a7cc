import Foundation
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// A ranking metric computed per user from the hit flags of the user's top-K list.
public protocol RankingMetric: Sendable {
    /// The name as written in `metrics` (RecBole's spelling).
    static var name: String { get }
    /// The value for one user at cutoff `k`: `hits[r]` is 1 when rank r+1 is a positive
    /// (`hits.count` may be below `k` when fewer items could be ranked); `positives` is the
    /// number of distinct positives (≥ 1).
    static func value(hits: UnsafeBufferPointer<UInt8>, positives: Int, k: Int) -> Double
}

/// Hits in the first min(k, n) ranks.
@inline(__always)
func hitCount(_ hits: UnsafeBufferPointer<UInt8>, _ k: Int) -> Int {
    var c = 0
    for r in 0..<min(k, hits.count) { c += Int(hits[r]) }
    return c
}

/// Recall@K = hits@K / |P|.
public enum Recall: RankingMetric {
    public static let name = "Recall"
    public static func value(hits: UnsafeBufferPointer<UInt8>, positives: Int, k: Int) -> Double {
        Double(hitCount(hits, k)) / Double(positives)
    }
}

/// MRR@K = 1 / rank of the first hit within K, or 0.
public enum MRR: RankingMetric {
    public static let name = "MRR"
    public static func value(hits: UnsafeBufferPointer<UInt8>, positives: Int, k: Int) -> Double {
        for r in 0..<min(k, hits.count) where hits[r] != 0 { return 1 / Double(r + 1) }
        return 0
    }
}

/// NDCG@K with binary gains: Σ_{r≤K} hit_r / log2(r+1), divided by the ideal DCG over
/// min(|P|, K) ranks.
public enum NDCG: RankingMetric {
    public static let name = "NDCG"
    public static func value(hits: UnsafeBufferPointer<UInt8>, positives: Int, k: Int) -> Double {
        var dcg = 0.0
        for r in 0..<min(k, hits.count) where hits[r] != 0 { dcg += discount(r) }
        var idcg = 0.0
        for r in 0..<min(positives, k) { idcg += discount(r) }
        return dcg / idcg
    }

    /// 1 / log2(r + 2), from a table for the usual cutoffs: a user's NDCG@10 otherwise
    /// takes up to twenty logarithms, in every validation pass.
    @inline(__always) static func discount(_ r: Int) -> Double {
        r < discounts.count ? discounts[r] : 1 / log2(Double(r + 2))
    }

    /// The same values `discount` computes, for ranks below 256.
    static let discounts: [Double] = (0..<256).map { 1 / log2(Double($0 + 2)) }
}

/// Hit@K = 1 when any of the first K ranks is a positive.
public enum Hit: RankingMetric {
    public static let name = "Hit"
    public static func value(hits: UnsafeBufferPointer<UInt8>, positives: Int, k: Int) -> Double {
        hitCount(hits, k) > 0 ? 1 : 0
    }
}

/// Precision@K = hits@K / K (K, not the list length, even when fewer items could be ranked).
public enum Precision: RankingMetric {
    public static let name = "Precision"
    public static func value(hits: UnsafeBufferPointer<UInt8>, positives: Int, k: Int) -> Double {
        Double(hitCount(hits, k)) / Double(k)
    }
}

/// MAP@K = Σ_{r≤K} hit_r · (hits@r / r) / min(|P|, K).
public enum MAP: RankingMetric {
    public static let name = "MAP"
    public static func value(hits: UnsafeBufferPointer<UInt8>, positives: Int, k: Int) -> Double {
        var sum = 0.0, seen = 0
        for r in 0..<min(k, hits.count) where hits[r] != 0 {
            seen += 1
            sum += Double(seen) / Double(r + 1)
        }
        return sum / Double(min(positives, k))
    }
}

/// A metric over the union of every evaluated user's top-K list.
public protocol ListMetric: Sendable {
    /// The name as written in `metrics`.
    static var name: String { get }
    /// The value at cutoff `k` over `lists` (users × width row-major, -1 padded), with
    /// `itemCount` items and the train interaction count of each item.
    static func value(lists: [Int32], width: Int, k: Int, itemCount: Int, trainCounts: [Float]) -> Double
}

/// ItemCoverage@K = distinct items recommended in any top-K list / number of items.
public enum ItemCoverage: ListMetric {
    public static let name = "ItemCoverage"
    public static func value(lists: [Int32], width: Int, k: Int, itemCount: Int, trainCounts: [Float]) -> Double {
        var seen = [Bool](repeating: false, count: itemCount)
        forEachListed(lists, width, k) { seen[Int($0)] = true }
        return Double(seen.lazy.filter { $0 }.count) / Double(max(1, itemCount))
    }
}

/// AveragePopularity@K = mean over users of (Σ train count of the top-K items) / K.
public enum AveragePopularity: ListMetric {
    public static let name = "AveragePopularity"
    public static func value(lists: [Int32], width: Int, k: Int, itemCount: Int, trainCounts: [Float]) -> Double {
        let users = width == 0 ? 0 : lists.count / width
        guard users > 0 else { return 0 }
        var total = 0.0
        forEachListed(lists, width, k) { total += Double(trainCounts[Int($0)]) }
        return total / Double(k) / Double(users)
    }
}

/// GiniIndex@K of how often each item is recommended across all top-K lists (0: every item
/// equally often; near 1: a few items take every slot), RecBole's formula with items never
/// recommended counted as zeros.
public enum GiniIndex: ListMetric {
    public static let name = "GiniIndex"
    public static func value(lists: [Int32], width: Int, k: Int, itemCount: Int, trainCounts: [Float]) -> Double {
        let users = width == 0 ? 0 : lists.count / width
        guard users > 0, itemCount > 0 else { return 0 }
        var counts = [Int](repeating: 0, count: itemCount)
        forEachListed(lists, width, k) { counts[Int($0)] += 1 }
        let recommended = counts.filter { $0 > 0 }.sorted()
        let n = Double(itemCount)
        var sum = 0.0
        for (j, c) in recommended.enumerated() {
            let idx = n - Double(recommended.count) + Double(j + 1)
            sum += (2 * idx - n - 1) * Double(c)
        }
        return sum / Double(users * k) / n
    }
}

/// ShannonEntropy@K of how often each item is recommended across all top-K lists, as RecBole
/// 1.2.1 computes it: −Σ p_i ln p_i over the recommended items (p_i: item i's share of the
/// slots), divided by the number of distinct items recommended (RecBole's normalisation). A list
/// shorter than K (fewer rankable items) counts its filled slots; RecBole fills it with masked items.
public enum ShannonEntropy: ListMetric {
    public static let name = "ShannonEntropy"
    public static func value(lists: [Int32], width: Int, k: Int, itemCount: Int, trainCounts: [Float]) -> Double {
        var counts = [Int](repeating: 0, count: itemCount)
        var slots = 0
        forEachListed(lists, width, k) { counts[Int($0)] += 1; slots += 1 }
        let recommended = counts.filter { $0 > 0 }
        guard !recommended.isEmpty else { return 0 }
        let entropy = recommended.reduce(0.0) { sum, c in
            let p = Double(c) / Double(slots)
            return sum - p * log(p)
        }
        return entropy / Double(recommended.count)
    }
}

@inline(__always)
func forEachListed(_ lists: [Int32], _ width: Int, _ k: Int, _ body: (Int32) -> Void) {
    guard width > 0 else { return }
    let users = lists.count / width
    for u in 0..<users {
        for r in 0..<min(k, width) {
            let item = lists[u * width + r]
            if item >= 0 { body(item) }
        }
    }
}

/// GAUC, RecBole 1.2.1's grouped AUC: each user's AUC of their positives against every other
/// rankable item, averaged with the user's positive count as weight. It reads the whole row of
/// scores, not a top-K list, so it has no cutoff: its key is `gauc`, as RecBole prints it.
public enum GAUC {
    public static let name = "GAUC"
    /// The report key.
    public static let key = "gauc"

    /// One row's AUC after masking: the share of (positive, negative) pairs that the positive wins,
    /// ties counting half. The negatives are the row's rankable items (above −∞) that are not
    /// positives; a masked positive wins no pair. RecBole leaves out a row without negatives
    /// (nil here); its average ranks of tied scores give the same halves.
    public static func rowAUC(_ row: UnsafeBufferPointer<Float>, positives: UnsafeBufferPointer<Int32>) -> Double? {
        guard !positives.isEmpty else { return nil }
        return withUnsafeTemporaryAllocation(of: Float.self, capacity: positives.count) { sorted -> Double? in
            var finite = 0
            for column in positives where row[Int(column)] > -.infinity {
                sorted[finite] = row[Int(column)]
                finite += 1
            }
            var scores = UnsafeMutableBufferPointer(rebasing: sorted[0..<finite])
            scores.sort()
            let (rankable, below, ties) = finite <= 32 ? countsByPasses(row, UnsafeBufferPointer(scores))
                : countsBySearch(row, UnsafeBufferPointer(scores))
            let negatives = rankable - finite
            guard negatives > 0 else { return nil }
            // Pairs of two positives (each counted once as a win, or twice as a half) are not AUC pairs.
            let wins = Double(below) + 0.5 * Double(ties - finite) - Double(finite * (finite - 1)) / 2
            return wins / (Double(positives.count) * Double(negatives))
        }
    }

    /// Rankable items; Σ over positives of the rankable items scored below each; Σ of those tied with
    /// each (itself included). A few positives: one eight-lane pass over the row for each (a sequential
    /// row's one target costs two passes; docs/performance.md has the binary search it replaced).
    static func countsByPasses(_ row: UnsafeBufferPointer<Float>, _ scores: UnsafeBufferPointer<Float>) -> (Int, Int, Int) {
        let (rankable, _, masked) = counts(row, -.infinity)   // masked: the −∞ ones, below every positive
        var below = 0, ties = 0
        for q in scores {
            let (_, lower, equal) = counts(row, q)
            below += lower - masked
            ties += equal
        }
        return (rankable, below, ties)
    }

    /// The entries of `row` above `q`, below it and equal to it (NaN in none), eight lanes at a time.
    static func counts(_ row: UnsafeBufferPointer<Float>, _ q: Float) -> (above: Int, below: Int, equal: Int) {
        let lanes = SIMD8<Float>(repeating: q), one = SIMD8<Int32>(repeating: 1), zero = SIMD8<Int32>()
        var above = zero, below = zero, equal = zero
        var j = 0
        let base = row.baseAddress!
        while j + 8 <= row.count {
            let v = UnsafeRawPointer(base + j).loadUnaligned(as: SIMD8<Float>.self)
            above &+= zero.replacing(with: one, where: v .> lanes)
            below &+= zero.replacing(with: one, where: v .< lanes)
            equal &+= zero.replacing(with: one, where: v .== lanes)
            j += 8
        }
        var a = Int(above.wrappedSum()), b = Int(below.wrappedSum()), e = Int(equal.wrappedSum())
        while j < row.count {
            let v = base[j]
            a += v > q ? 1 : 0; b += v < q ? 1 : 0; e += v == q ? 1 : 0
            j += 1
        }
        return (a, b, e)
    }

    /// The same counts for many positives: one pass with a binary search among their sorted scores per item.
    static func countsBySearch(_ row: UnsafeBufferPointer<Float>, _ scores: UnsafeBufferPointer<Float>) -> (Int, Int, Int) {
        var rankable = 0, below = 0, ties = 0
        for s in row where s > -.infinity {
            rankable += 1
            let (lower, upper) = bounds(of: s, in: scores)
            below += scores.count - upper   // positives scored above s
            ties += upper - lower
        }
        return (rankable, below, ties)
    }

    /// The first index whose score is ≥ `s` and the first whose score is > `s` in ascending `scores`.
    @inline(__always) static func bounds(of s: Float, in scores: UnsafeBufferPointer<Float>) -> (Int, Int) {
        var lo = 0, hi = scores.count
        while lo < hi { let mid = (lo + hi) / 2; if scores[mid] < s { lo = mid + 1 } else { hi = mid } }
        var upper = lo
        hi = scores.count
        while upper < hi { let mid = (upper + hi) / 2; if scores[mid] <= s { upper = mid + 1 } else { hi = mid } }
        return (lo, upper)
    }

    /// RecBole's average: Σ positives · AUC / Σ positives over the rows that have one; 0 when none has
    /// (RecBole's NaN would read as a diverged model).
    public static func weightedMean(_ aucs: [Double], positives: [Int]) -> Double {
        var sum = 0.0, weight = 0
        for (auc, p) in zip(aucs, positives) where !auc.isNaN {
            sum += Double(p) * auc
            weight += p
        }
        return weight == 0 ? 0 : sum / Double(weight)
    }
}

/// Every metric recbench computes, by lower-cased name.
public enum MetricRegistry {
    /// Per-user ranking metrics.
    public static let ranking: [any RankingMetric.Type] = [Recall.self, MRR.self, NDCG.self, Hit.self, Precision.self, MAP.self]
    /// Metrics over the union of top-K lists.
    public static let lists: [any ListMetric.Type] = [ItemCoverage.self, AveragePopularity.self, GiniIndex.self, ShannonEntropy.self]

    /// All metric names.
    public static var names: [String] { ranking.map { $0.name } + lists.map { $0.name } + [TailPercentage.name, GAUC.name] }
}
