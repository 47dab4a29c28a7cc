import Testing
import RecBenchCore

struct SplitterTests {
    let rs = SplitStrategy.ratio([0.8, 0.1, 0.1])

    /// RecBole 1.2.1's rounding, as listed in the reference's semantics note 1.
    @Test(arguments: [(1, [1, 0, 0]), (2, [1, 0, 1]), (3, [1, 1, 1]), (10, [8, 1, 1]), (19, [17, 1, 1]),
                      (20, [16, 2, 2]), (29, [25, 2, 2]), (30, [24, 3, 3]), (737, [591, 73, 73])])
    func ratioSplitRoundsAsRecBole(total: Int, expected: [Int]) {
        #expect(Splitter.partCounts(total: total, strategy: rs) == expected)
    }

    @Test func twoRatiosMeanTrainAndTest() {
        #expect(Splitter.partCounts(total: 10, strategy: .ratio([0.8, 0.2])) == [8, 0, 2])
        #expect(Splitter.partCounts(total: 3, strategy: .ratio([4, 1])) == [2, 0, 1])   // ratios are normalised
    }

    @Test func leaveOneOutKeepsAtLeastOneTrainRow() {
        #expect(Splitter.partCounts(total: 5, strategy: .leaveOneOut(validAndTest: true)) == [3, 1, 1])
        #expect(Splitter.partCounts(total: 2, strategy: .leaveOneOut(validAndTest: true)) == [1, 0, 1])
        #expect(Splitter.partCounts(total: 1, strategy: .leaveOneOut(validAndTest: true)) == [1, 0, 0])
        #expect(Splitter.partCounts(total: 5, strategy: .leaveOneOut(validAndTest: false)) == [4, 0, 1])
    }

    func interactions(_ rows: [(Int32, Int32, Double)]) -> Interactions {
        Interactions(users: rows.map(\.0), items: rows.map(\.1), timestamps: rows.map(\.2), ratings: nil, parts: nil)
    }

    @Test func timeOrderIsStableForEqualTimestamps() throws {
        // One user, rows in file order; rows 0 and 1 share a time, row 2 is earliest.
        let log = interactions([(0, 10, 5), (0, 11, 5), (0, 12, 1)])
        let parts = try Splitter.split(log, userCount: 1, settings: SplitSettings(order: .time, strategy: rs, seed: 1))
        #expect(parts == [.valid, .test, .train])
    }

    @Test func userGroupsAreCutIndependently() throws {
        let log = interactions([(0, 1, 3), (1, 1, 9), (0, 2, 1), (1, 2, 8), (0, 3, 2), (1, 3, 7)])
        let parts = try Splitter.split(log, userCount: 2, settings: SplitSettings(order: .time, strategy: rs, seed: 1))
        // User 0 by time: rows 2, 4, 0 → train, valid, test. User 1: rows 5, 3, 1.
        #expect(parts == [.test, .test, .train, .valid, .valid, .train])
    }

    @Test func randomOrderDependsOnlyOnTheSeed() throws {
        let log = interactions((0..<200).map { (Int32($0 % 4), Int32($0), Double($0)) })
        let split = { (seed: UInt64) in try Splitter.split(log, userCount: 4, settings: SplitSettings(order: .random, strategy: rs, seed: seed)) }
        #expect(try split(7) == split(7))
        #expect(try split(7) != split(8))
        #expect(try split(7).filter { $0 == .test }.count == 4 * 5)   // 50 rows per user → 40/5/5
    }

    /// Ten rows of three users; rows 2 and 8 are the latest, at the same time. By (time, row): 1 3 5 7 0 9 4 6 2 8.
    func threeUsers() -> Interactions {
        interactions([(0, 1, 5), (1, 1, 1), (2, 1, 9), (0, 2, 2), (1, 2, 7), (2, 2, 3), (0, 3, 8), (1, 3, 4), (2, 3, 9), (0, 4, 6)])
    }

    @Test func ungroupedRatioSplitCutsTheWholeLogByTime() throws {
        // Ten rows → 8 / 1 / 1 in time order, ties in file order: row 2 is valid, row 8 test; no user is cut alone.
        let settings = SplitSettings(order: .time, strategy: rs, seed: 1, grouping: .none)
        #expect(try Splitter.split(threeUsers(), userCount: 3, settings: settings)
                == [.train, .train, .valid, .train, .train, .train, .train, .train, .test, .train])
    }

    @Test func timeBoundarySplitCutsTestAtAPercentileAndValidPerUser() throws {
        // Row r at time r. The boundary, numpy's 90th percentile of 0…10, is 9 exactly: row 9 is before it, row 10
        // test. Before it each user's first ⌊n · 0.8 / 0.9⌋ rows are train: user 0 (rows 0 2 4 6 | 8), user 1
        // (1 5 7 | 9), and user 2, whose one row 3 is valid and who has no train row (RS's top-up would keep it in train).
        let log = interactions([0, 1, 0, 2, 0, 1, 0, 1, 0, 1, 2].enumerated().map { (Int32($1), Int32($0), Double($0)) })
        let settings = SplitSettings(order: .time, strategy: .timeBoundary([0.8, 0.1, 0.1]), seed: 1)
        #expect(try Splitter.split(log, userCount: 3, settings: settings)
                == [.train, .train, .train, .valid, .train, .train, .train, .train, .valid, .valid, .test])
        let shuffled = SplitSettings(order: .random, strategy: .timeBoundary([0.8, 0.1, 0.1]), seed: 1)
        #expect(throws: RecBenchError.self) { try Splitter.split(log, userCount: 3, settings: shuffled) }
    }

    /// numpy 1.26's `np.percentile` on the same values (its printed results), the last past
    /// halfway between two values, where numpy interpolates from the upper one.
    @Test func percentileIsNumpys() {
        #expect(Splitter.percentile([1, 2, 3, 4], 90) == 3.7)
        #expect(Splitter.percentile([10, 20, 30], 75) == 25.0)
        #expect(Splitter.percentile([5, 1, 9, 3, 7], 30) == 3.4)
        #expect(Splitter.percentile([0, 1e9, 1e9 + 1], 99.9) == 1000000000.998)
        #expect(Splitter.percentile([0, 7], 60) == 4.199999999999999)   // a + d · γ would give 4.2
        #expect(Splitter.percentile([], 50).isNaN)
    }

    @Test func nextItemSplitRefusesCutsAcrossUsers() {
        for settings in [SplitSettings(order: .time, strategy: rs, seed: 1, grouping: .none),
                         SplitSettings(order: .time, strategy: .timeBoundary([0.8, 0.1, 0.1]), seed: 1)] {
            #expect(throws: RecBenchError.self) { try SequenceSplitter.split(threeUsers(), userCount: 3, settings: settings) }
        }
    }

    @Test func timeOrderWithoutTimestampsIsAClearError() {
        let log = Interactions(users: [0], items: [0], timestamps: nil, ratings: nil, parts: nil)
        #expect(throws: RecBenchError.self) {
            try Splitter.split(log, userCount: 1, settings: SplitSettings(order: .time, strategy: rs, seed: 1))
        }
    }
}
