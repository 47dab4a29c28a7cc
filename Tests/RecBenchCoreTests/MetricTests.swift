import Foundation
import Testing
import RecBenchCore

/// Each metric on hand-computed ranked lists (values worked out on paper, not by the code).
struct MetricTests {
    func value(_ metric: any RankingMetric.Type, _ hits: [UInt8], positives: Int, k: Int) -> Double {
        hits.withUnsafeBufferPointer { metric.value(hits: $0, positives: positives, k: k) }
    }

    /// Ranks below 256 take their discount from a table, later ones compute it: both are
    /// 1 / log2(r + 1) for rank r.
    @Test func ndcgDiscountsAreTheSameOnBothSidesOfTheTable() {
        var hits = [UInt8](repeating: 0, count: 300)
        hits[3] = 1; hits[255] = 1; hits[256] = 1; hits[280] = 1
        let dcg = 1 / log2(5.0) + 1 / log2(257.0) + 1 / log2(258.0) + 1 / log2(282.0)
        let idcg = (0..<4).reduce(0.0) { $0 + 1 / log2(Double($1 + 2)) }
        #expect(close(value(NDCG.self, hits, positives: 4, k: 300), dcg / idcg, 1e-15))
        #expect(close(value(NDCG.self, hits, positives: 4, k: 256), (1 / log2(5.0) + 1 / log2(257.0)) / idcg, 1e-15))
    }

    @Test func twoOfTwoPositivesAtRanksOneAndThree() {
        // Positives {A, C}; list [A, B, C] → hits 1 0 1; K = 3.
        let hits: [UInt8] = [1, 0, 1]
        #expect(close(value(Recall.self, hits, positives: 2, k: 3), 1))
        #expect(close(value(MRR.self, hits, positives: 2, k: 3), 1))
        // DCG = 1/log2 2 + 1/log2 4 = 1.5; IDCG = 1 + 1/log2 3.
        #expect(close(value(NDCG.self, hits, positives: 2, k: 3), 1.5 / (1 + 1 / log2(3.0))))
        #expect(close(value(Hit.self, hits, positives: 2, k: 3), 1))
        #expect(close(value(Precision.self, hits, positives: 2, k: 3), 2.0 / 3))
        // AP = (1/1 + 2/3) / min(2, 3).
        #expect(close(value(MAP.self, hits, positives: 2, k: 3), (1 + 2.0 / 3) / 2))
    }

    @Test func moreGroundTruthThanCutoff() {
        // Five positives, only rank 2 of the top 2 hits.
        let hits: [UInt8] = [0, 1]
        #expect(close(value(Recall.self, hits, positives: 5, k: 2), 0.2))
        #expect(close(value(MRR.self, hits, positives: 5, k: 2), 0.5))
        // IDCG over min(5, 2) = 2 ranks.
        #expect(close(value(NDCG.self, hits, positives: 5, k: 2), (1 / log2(3.0)) / (1 + 1 / log2(3.0))))
        #expect(close(value(Precision.self, hits, positives: 5, k: 2), 0.5))
        #expect(close(value(MAP.self, hits, positives: 5, k: 2), 0.5 / 2))
    }

    @Test func cutoffLargerThanTheRankedList() {
        // Only two items could be ranked (K = 10 > item count); both are positives of three.
        let hits: [UInt8] = [1, 1]
        #expect(close(value(Recall.self, hits, positives: 3, k: 10), 2.0 / 3))
        #expect(close(value(Precision.self, hits, positives: 3, k: 10), 0.2))   // divides by K
        #expect(close(value(NDCG.self, hits, positives: 3, k: 10), (1 + 1 / log2(3.0)) / (1 + 1 / log2(3.0) + 0.5)))
        #expect(close(value(MAP.self, hits, positives: 3, k: 10), 2.0 / 3))
    }

    @Test func noHitAtAll() {
        let hits: [UInt8] = [0, 0, 0, 0]
        for metric in MetricRegistry.ranking {
            #expect(value(metric, hits, positives: 1, k: 4) == 0, "\(metric.name)")
        }
    }

    @Test func cutoffSmallerThanTheListIgnoresLaterHits() {
        let hits: [UInt8] = [0, 0, 1]
        #expect(value(Hit.self, hits, positives: 1, k: 2) == 0)
        #expect(value(MRR.self, hits, positives: 1, k: 2) == 0)
        #expect(close(value(MRR.self, hits, positives: 1, k: 3), 1.0 / 3))
    }

    @Test func listMetricsOnTwoUsers() {
        // Two users, width 3 (K = 2 uses the first two slots), four items.
        let lists: [Int32] = [0, 1, 3,
                              0, 2, -1]
        let counts: [Float] = [10, 4, 2, 0]
        #expect(close(ItemCoverage.value(lists: lists, width: 3, k: 2, itemCount: 4, trainCounts: counts), 3.0 / 4))
        // Users' mean of (Σ popularity / K): ((10+4)/2 + (10+2)/2) / 2.
        #expect(close(AveragePopularity.value(lists: lists, width: 3, k: 2, itemCount: 4, trainCounts: counts), 6.5))
        // Recommendation counts: item0 2, item1 1, item2 1, item3 0 → sorted [1, 1, 2] at
        // indices 2, 3, 4 of n = 4: Σ(2i − n − 1)·c = (−1)·1 + 1·1 + 3·2 = 6; / (2·2) / 4.
        #expect(close(GiniIndex.value(lists: lists, width: 3, k: 2, itemCount: 4, trainCounts: counts), 6.0 / 4 / 4))
        // Four slots: item0 twice (p ½), items 1 and 2 once (p ¼); RecBole divides by the 3 distinct items.
        let entropy = -(0.5 * log(0.5) + 2 * 0.25 * log(0.25)) / 3
        #expect(close(ShannonEntropy.value(lists: lists, width: 3, k: 2, itemCount: 4, trainCounts: counts), entropy))
        // K = 3 leaves the second user's padding slot out: five slots, item0 2/5, items 1, 2, 3 1/5 each.
        let three = -(0.4 * log(0.4) + 3 * 0.2 * log(0.2)) / 4
        #expect(close(ShannonEntropy.value(lists: lists, width: 3, k: 3, itemCount: 4, trainCounts: counts), three))
    }
}

/// GAUC's per-row AUC (RecBole's `GAUC`), by hand and against counting every pair.
struct GAUCTests {
    func auc(_ row: [Float], _ positives: [Int32]) -> Double? {
        row.withUnsafeBufferPointer { r in positives.withUnsafeBufferPointer { GAUC.rowAUC(r, positives: $0) } }
    }

    @Test func oneRowByHand() {
        // Items 0…4; item 4 is masked. Positives 1 (0.5) and 4 (masked). Negatives 0, 2, 3.
        // Positive 1 beats item 3, ties item 2 (a half), loses to item 0: 1.5 of 2 · 3 pairs.
        #expect(close(auc([0.9, 0.5, 0.5, 0.1, -.infinity], [1, 4])!, 0.25))
        // Every positive above every negative, then below.
        #expect(close(auc([3, 2, 1, 0], [0, 1])!, 1))
        #expect(close(auc([3, 2, 1, 0], [2, 3])!, 0))
        // Two tied positives among themselves count no pair.
        #expect(close(auc([1, 1, 0], [0, 1])!, 1))
    }

    @Test func rowsWithoutANegativeOrPositiveHaveNone() {
        #expect(auc([1, 2, -.infinity], [0, 1]) == nil)
        #expect(auc([1, 2, 3], []) == nil)
        #expect(auc([-.infinity, -.infinity], [0]) == nil)
    }

    @Test func matchesCountingEveryPair() {
        var rng = SeededGenerator(seed: 7)
        var searched = 0
        for trial in 0..<200 {
            // Odd trials: long rows with over 32 positives (the binary-search path), even ones a few (one pass per positive).
            let n = trial % 2 == 1 ? 80 + Int(rng.next() % 60) : 2 + Int(rng.next() % 40)
            // Few distinct values, so ties are common; a few masked items.
            let row: [Float] = (0..<n).map { _ in rng.next() % 9 == 0 ? -.infinity : Float(rng.next() % 6) }
            let positives = (0..<Int32(n)).filter { _ in rng.next() % (trial % 2 == 1 ? 2 : 3) == 0 }
            if positives.filter({ row[Int($0)] > -.infinity }).count > 32 { searched += 1 }
            var wins = 0.0, negatives = 0
            for j in 0..<n where row[j] > -.infinity && !positives.contains(Int32(j)) { negatives += 1 }
            for p in positives where row[Int(p)] > -.infinity {
                for j in 0..<n where row[j] > -.infinity && !positives.contains(Int32(j)) {
                    wins += row[Int(p)] > row[j] ? 1 : row[Int(p)] == row[j] ? 0.5 : 0
                }
            }
            let expected = positives.isEmpty || negatives == 0 ? nil : wins / Double(positives.count * negatives)
            let got = auc(row, positives)
            #expect((got == nil) == (expected == nil), "trial \(trial)")
            if let got, let expected { #expect(close(got, expected), "trial \(trial)") }
        }
        #expect(searched > 50)
    }

    @Test func weightsRowsByTheirPositivesAndSkipsRowsWithoutAUC() {
        #expect(close(GAUC.weightedMean([0.5, .nan, 1.0], positives: [1, 5, 3]), (0.5 + 3) / 4))
        #expect(GAUC.weightedMean([.nan], positives: [2]) == 0)
    }
}

struct MetricKeyTests {
    @Test func printsLowerCaseAndParsesAnyCase() {
        #expect(MetricKey("NDCG", k: 10).description == "ndcg@10")
        #expect(MetricKey(parsing: "MRR@20") == MetricKey("mrr", k: 20))
        #expect(MetricKey(parsing: "users_with_hit@5")?.name == "users_with_hit")
    }

    @Test func rejectsKeysWithoutAPositiveCutoff() {
        for text in ["ndcg", "ndcg@", "@10", "ndcg@0", "ndcg@-3", "ndcg@10@2", "ndcg@ten"] {
            #expect(MetricKey(parsing: text) == nil, "\(text)")
        }
    }
}

