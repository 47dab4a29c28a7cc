import Foundation
import Testing
import RecBenchCore
import Linalg

/// Item2vec's parts checked by hand: sessions, the noise sampler, one SGNS step, scoring.
struct Item2vecTests {
    // MARK: Sessions

    /// Rows (user, item, time) → sessions, built with `gap`.
    func sessions(_ rows: [(Int32, Int32, Double)], gap: Double?, withTimes: Bool = true) -> [[Int32]] {
        Sessions.build(users: rows.map(\.0), items: rows.map(\.1), timestamps: withTimes ? rows.map(\.2) : nil,
                       rows: Array(rows.indices), userCount: 3, gap: gap)
    }

    @Test func sessionsCutAtGapsAndDropSingleItems() {
        // User 0: 1,2 at t=0,50 | gap 200 | 3 alone at 250 | gap 1000 | 4,5 at 1250,1300.
        let rows: [(Int32, Int32, Double)] = [(0, 1, 0), (0, 2, 50), (0, 3, 250), (0, 4, 1250), (0, 5, 1300)]
        #expect(sessions(rows, gap: 100) == [[1, 2], [4, 5]])
        #expect(sessions(rows, gap: 200) == [[1, 2, 3], [4, 5]])       // a gap equal to session_gap stays inside
        #expect(sessions(rows, gap: nil) == [[1, 2, 3, 4, 5]])
    }

    @Test func equalTimestampsAreOneBasketAtGapZero() {
        // Two baskets of user 1 (t=10 and t=20), rows interleaved with user 2's, out of time order.
        let rows: [(Int32, Int32, Double)] = [(1, 7, 20), (2, 1, 5), (1, 3, 10), (1, 4, 10), (2, 2, 5), (1, 8, 20), (1, 9, 20)]
        #expect(sessions(rows, gap: 0) == [[3, 4], [7, 8, 9], [1, 2]])
    }

    @Test func duplicatesInsideASessionCountOnce() {
        let rows: [(Int32, Int32, Double)] = [(0, 5, 0), (0, 6, 1), (0, 5, 2), (0, 5, 3), (1, 2, 0), (1, 2, 1)]
        #expect(sessions(rows, gap: 10) == [[5, 6]])   // user 1 bought one item twice: no pair
        #expect(sessions(rows, gap: 10, withTimes: false) == [[5, 6]])
    }

    @Test func pairCountsMatchEnumeration() {
        for n in 2...9 {
            for window in 0...10 {
                var pairs = 0
                for a in 0..<n { for b in 0..<n where b != a && (window == 0 || abs(a - b) <= window) { pairs += 1 } }
                #expect(Sessions.pairCount(sessionLength: n, window: window) == pairs, "n \(n) window \(window)")
            }
        }
    }

    // MARK: Noise distribution

    @Test func theAliasTableDrawsCountToThePowerThreeQuartersWithin5Sigma() {
        let counts: [Double] = [1, 0, 3, 10, 100, 7, 0, 42, 1000, 2]
        let weights = counts.map { $0 > 0 ? pow($0, 0.75) : 0 }
        let table = AliasTable(weights: weights)
        let draws = 400_000
        var seen = [Int](repeating: 0, count: counts.count)
        var rng = SeededGenerator(seed: 7)
        for _ in 0..<draws { seen[Int(table.draw(&rng))] += 1 }
        let total = weights.reduce(0, +)
        var chiSquare = 0.0
        for (i, w) in weights.enumerated() {
            let expected = Double(draws) * w / total
            if w == 0 { #expect(seen[i] == 0, "item \(i) has count 0 but was drawn"); continue }
            #expect(abs(Double(seen[i]) - expected) <= 5 * expected.squareRoot(), "item \(i): \(seen[i]) vs \(expected)")
            chiSquare += pow(Double(seen[i]) - expected, 2) / expected
        }
        #expect(chiSquare < 27.9)   // χ², 7 degrees of freedom, p = 0.0002
        // Item 8 has 1000^0.75 / Σ = 0.735 of the mass; plain counts (exponent 1) would give
        // it 0.858: the bounds tell the two apart.
        #expect(Double(seen[8]) / Double(draws) > 0.70 && Double(seen[8]) / Double(draws) < 0.77)
    }

    // MARK: One step

    @Test func oneStepEqualsTheHandDerivedGradient() {
        // 3 items, d = 4; no negatives, so the step is the positive term alone.
        let d = 4, rate: Float = 0.1
        let v0 = Matrix(rows: 3, columns: d, values: [0.1, -0.2, 0.3, 0.4,  0.5, 0.1, -0.1, 0.2,  0, 0, 0, 0])
        let u0 = Matrix(rows: 3, columns: d, values: [0.3, 0.1, 0.2, -0.1,  0, 0, 0, 0,  0.2, 0.2, 0.2, 0.2])
        let v = SharedMatrix(v0), u = SharedMatrix(u0)
        var rng = SeededGenerator(seed: 1), loss = SGNSStep.LossSample()
        let step = SGNSStep(dimension: d, negatives: 0, noise: AliasTable(weights: [1, 1, 1]))
        step(centre: 0, context: 1, rate: rate, v, u, centreRow: u.row(0), &rng, &loss)
        // Hand-derived: f = ⟨v_1, u_0⟩, g = η (1 − σ(f)); v_1 += g u_0; u_0 += g v_1(old).
        let f = (0..<d).reduce(Float(0)) { $0 + v0.values[d + $1] * u0.values[$1] }
        let g = rate * (1 - 1 / (1 + exp(-f)))
        for j in 0..<d {
            #expect(abs(v.matrix.values[d + j] - (v0.values[d + j] + g * u0.values[j])) < 2e-4)
            #expect(abs(u.matrix.values[j] - (u0.values[j] + g * v0.values[d + j])) < 2e-4)
        }
        #expect(v.matrix.values[0..<d] == v0.values[0..<d] && u.matrix.values[d...] == u0.values[d...])   // nothing else moves
    }

    @Test func negativesPushTheirOutputVectorsAway() {
        // Item 2 is the only possible negative: its output vector moves against v_c.
        let d = 8
        let v = SharedMatrix(Matrix(rows: 3, columns: d, values: (0..<24).map { Float($0 % 5) * 0.05 }))
        let u0 = Matrix(rows: 3, columns: d, values: (0..<24).map { Float($0 % 3) * 0.04 })
        let u = SharedMatrix(u0)
        var rng = SeededGenerator(seed: 3), loss = SGNSStep.LossSample()
        let vc = v.matrix.values[d..<(2 * d)]
        SGNSStep(dimension: d, negatives: 3, noise: AliasTable(weights: [0, 0, 1]))(centre: 0, context: 1, rate: 0.5, v, u, centreRow: u.row(0), &rng, &loss)
        let before = zip(vc, u0.values[(2 * d)...]).reduce(Float(0)) { $0 + $1.0 * $1.1 }
        let after = zip(vc, u.matrix.values[(2 * d)...]).reduce(Float(0)) { $0 + $1.0 * $1.1 }
        #expect(after < before)
    }

    // MARK: Scoring

    @Test func scoresAreTheSumOfCosinesToTheUsersItems() throws {
        let (split, d) = try blockFixture()
        let model = try #require(try fitted(Item2vec.self, on: split, dataset: d, ["embedding_size": .int(8)]) as? Item2vec)
        let v = model.parameters["input"], dim = v.columns
        func unit(_ i: Int) -> [Float] {
            let row = Array(v.values[(i * dim)..<((i + 1) * dim)])
            let norm = row.reduce(0) { $0 + $1 * $1 }.squareRoot()
            return row.map { $0 / norm }
        }
        let got = allScores(model, users: d.userCount, items: d.itemCount)
        for user in 0..<d.userCount {
            let history = Set(split.trainMatrix.columns(ofRow: user))
            for j in 0..<d.itemCount {
                let naive = history.reduce(Float(0)) { acc, i in acc + zip(unit(Int(i)), unit(j)).reduce(0) { $0 + $1.0 * $1.1 } }
                #expect(abs(got[user, j] - naive) < 1e-4, "user \(user) item \(j)")
            }
        }
        // It learned the two taste groups: each user's withheld item outranks every item of the other group.
        for user in 0..<d.userCount {
            let test = split.testMatrix.columns(ofRow: user).first.map(Int.init)!
            let others = user < 8 ? 6..<12 : 0..<6
            #expect(others.allSatisfy { got[user, $0] < got[user, test] }, "user \(user)")
        }
    }
}
