import RecBenchSupport
import RecBenchData
import RecBenchContract
/// The questions a shop asks of a ranking, answered per cutoff K from per-user hit counts.
/// "Repeat" means an item the user had interacted with before the evaluated split; "new"
/// means one they had not.
///
/// - `users_with_hit@K`: users with at least one hit; `users_with_hit_share@K` the share of
///   evaluated users.
/// - `repeat_hit_share@K` = Σ repeat hits / Σ hits over all users (0 when there is no hit).
/// - `users_with_new_hit@K`: users with at least one hit on a new item (and `_share`).
/// - `repeat_recall@K`: mean over users with ≥ 1 repeat positive of repeat hits / repeat
///   positives; `new_recall@K` likewise for new positives.
/// - `repeat_positive_share`: repeat positives / all positives (independent of K).
/// - `history_share@K`: mean over users of the share of their top K that they had before
///   (the repetition ratio of next-basket evaluations): before the split for a user row,
///   earlier in the sequence for a next-item example (`PastItems`).
/// - `item_coverage@K`: ItemCoverage, always computed (the evaluator adds it).
public enum Analyses {
    /// One user's counts at one cutoff.
    public struct UserHits: Sendable {
        public var positives: Int
        public var repeatPositives: Int
        public var hits: Int
        public var repeatHits: Int
        /// Top-K items the user had before (nil: not known for this row).
        public var fromHistory: Int?

        public init(positives: Int, repeatPositives: Int, hits: Int, repeatHits: Int, fromHistory: Int? = nil) {
            self.positives = positives; self.repeatPositives = repeatPositives
            self.hits = hits; self.repeatHits = repeatHits; self.fromHistory = fromHistory
        }
    }

    /// The analyses at cutoff `k` over `users`.
    public static func summarize(_ users: [UserHits], k: Int) -> [String: Double] {
        let n = Double(max(1, users.count))
        let withHit = users.reduce(0) { $0 + ($1.hits > 0 ? 1 : 0) }
        let withNewHit = users.reduce(0) { $0 + ($1.hits - $1.repeatHits > 0 ? 1 : 0) }
        let hits = users.reduce(0) { $0 + $1.hits }
        let repeatHits = users.reduce(0) { $0 + $1.repeatHits }
        // Sums over users, no filtered copies: this runs on every evaluated user.
        var withRepeat = 0, withNew = 0, repeatRecall = 0.0, newRecall = 0.0
        for u in users {
            if u.repeatPositives > 0 { withRepeat += 1; repeatRecall += Double(u.repeatHits) / Double(u.repeatPositives) }
            if u.positives - u.repeatPositives > 0 { withNew += 1; newRecall += Double(u.hits - u.repeatHits) / Double(u.positives - u.repeatPositives) }
        }
        let positives = users.reduce(0) { $0 + $1.positives }
        let repeatPositives = users.reduce(0) { $0 + $1.repeatPositives }
        var out = [
            MetricKey("users_with_hit", k: k).description: Double(withHit),
            MetricKey("users_with_hit_share", k: k).description: Double(withHit) / n,
            MetricKey("repeat_hit_share", k: k).description: hits == 0 ? 0 : Double(repeatHits) / Double(hits),
            MetricKey("users_with_new_hit", k: k).description: Double(withNewHit),
            MetricKey("users_with_new_hit_share", k: k).description: Double(withNewHit) / n,
            MetricKey("repeat_recall", k: k).description: withRepeat == 0 ? 0 : repeatRecall / Double(withRepeat),
            MetricKey("new_recall", k: k).description: withNew == 0 ? 0 : newRecall / Double(withNew),
            "repeat_positive_share": positives == 0 ? 0 : Double(repeatPositives) / Double(positives),
        ]
        if !users.isEmpty, users.allSatisfy({ $0.fromHistory != nil }) {
            out[MetricKey("history_share", k: k).description] = users.reduce(0.0) { $0 + Double($1.fromHistory!) / Double(k) } / n
        }
        return out
    }
}

extension Analyses {
    /// A repeat-aware model's switch (RepeatNet's P(repeat) per evaluated row) against what
    /// the row's target was: `repeat_mode_mean` over all rows, `_repeat_targets` and
    /// `_new_targets` over the rows whose positive is (is not) a repeat, and `repeat_mode_auc`,
    /// the chance that a repeat row gets a higher P(repeat) than a new one (ties count ½;
    /// 0.5 is no separation; absent when either group is empty).
    public static func repeatMode(_ probabilities: [Float], isRepeat: [Bool]) -> [String: Double] {
        precondition(probabilities.count == isRepeat.count, "repeatMode: one flag per row")
        func mean(_ values: [Float]) -> Double { values.isEmpty ? 0 : values.reduce(0.0) { $0 + Double($1) } / Double(values.count) }
        let repeats = zip(probabilities, isRepeat).filter { $0.1 }.map { $0.0 }
        let new = zip(probabilities, isRepeat).filter { !$0.1 }.map { $0.0 }
        var out = ["repeat_mode_mean": mean(probabilities), "repeat_mode_mean_repeat_targets": mean(repeats),
                   "repeat_mode_mean_new_targets": mean(new)]
        guard !repeats.isEmpty, !new.isEmpty else { return out }
        // Mann–Whitney: the rank sum of the repeat rows among all, mid-ranks for ties.
        let order = probabilities.indices.sorted { probabilities[$0] < probabilities[$1] }
        var rankSum = 0.0, start = 0
        while start < order.count {
            var end = start
            while end + 1 < order.count && probabilities[order[end + 1]] == probabilities[order[start]] { end += 1 }
            let midRank = Double(start + end) / 2 + 1
            for i in start...end where isRepeat[order[i]] { rankSum += midRank }
            start = end + 1
        }
        let (m, n) = (Double(repeats.count), Double(new.count))
        out["repeat_mode_auc"] = (rankSum - m * (m + 1) / 2) / (m * n)
        return out
    }
}

/// TailPercentage@K (RecBole): the mean over users of the share of their top-K that are tail
/// items. With `tail_ratio` ≤ 1 the tail is the least popular `max(1, ⌊ratio × items in
/// train⌋)` items that occur in train (ties by id); with a ratio > 1, the items whose train
/// count is ≤ the ratio.
public enum TailPercentage {
    public static let name = "TailPercentage"

    /// A membership mask of the tail items.
    public static func tailItems(trainCounts: [Float], ratio: Double) -> [Bool] {
        var tail = [Bool](repeating: false, count: trainCounts.count)
        let present = trainCounts.indices.filter { trainCounts[$0] > 0 }
        if ratio > 1 {
            for i in present where Double(trainCounts[i]) <= ratio { tail[i] = true }
        } else {
            let sorted = present.sorted { (trainCounts[$0], $0) < (trainCounts[$1], $1) }
            for i in sorted.prefix(max(1, Int(Double(sorted.count) * ratio))) { tail[i] = true }
        }
        return tail
    }

    /// The metric at cutoff `k` over the top lists.
    public static func value(lists: [Int32], width: Int, k: Int, tail: [Bool]) -> Double {
        guard width > 0, !lists.isEmpty else { return 0 }
        let users = lists.count / width
        var total = 0.0
        for u in 0..<users {
            var inTail = 0
            for r in 0..<min(k, width) {
                let item = lists[u * width + r]
                if item >= 0 && tail[Int(item)] { inTail += 1 }
            }
            total += Double(inTail) / Double(k)
        }
        return total / Double(users)
    }
}
