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

