import Linalg
import RecBenchSupport

/// Seeded synthetic interaction logs for benchmarks: item popularity follows a Zipf law,
/// each user has a geometric-ish history length, timestamps increase per user.
public enum SyntheticData {
    /// A dataset of `users × items` with about `meanHistory` distinct items per user.
    public static func zipf(users: Int, items: Int, meanHistory: Int, exponent: Double = 0.8, seed: UInt64) -> Dataset {
        var rng = SeededGenerator(seed: seed, stream: 0x5EED)
        // Cumulative Zipf weights for inverse-CDF sampling.
        var cumulative = [Double](repeating: 0, count: items)
        var total = 0.0
        for i in 0..<items {
            total += 1 / pow(Double(i + 1), exponent)
            cumulative[i] = total
        }
        var us = [Int32](), its = [Int32](), ts = [Double]()
        us.reserveCapacity(users * meanHistory)
        var seen = Set<Int32>()
        for u in 0..<users {
            let length = max(5, min(items / 2, Int(-log(Double(rng.nextUnitFloat()) + 1e-9) * Double(meanHistory))))
            seen.removeAll(keepingCapacity: true)
            var t = 0.0
            while seen.count < length {
                let x = Double(rng.nextUnitFloat()) * total
                var lo = 0, hi = items - 1
                while lo < hi { let mid = (lo + hi) / 2; if cumulative[mid] < x { lo = mid + 1 } else { hi = mid } }
                let item = Int32(lo)
                if seen.insert(item).inserted {
                    us.append(Int32(u)); its.append(item); ts.append(t)
                    t += 1
                }
            }
        }
        return Dataset(name: "synthetic-\(users)x\(items)", userTokens: (0..<users).map { "u\($0)" },
                       itemTokens: (0..<items).map { "i\($0)" },
                       interactions: Interactions(users: us, items: its, timestamps: ts, ratings: nil, parts: nil))
    }
}

import Foundation
