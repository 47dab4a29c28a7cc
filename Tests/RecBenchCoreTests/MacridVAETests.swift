import Foundation
import Logging
import Testing
import RecBenchCore
import Linalg

/// MacridVAE's scores against its formula, computed here in Double from the parameters:
/// ŷ_ui = log Σ_k c_ik exp(cos(μ_k(u), item_i) / τ), c_i = softmax_k(cos(item_i, concept_k) / τ),
/// μ_k(u) the normalised first half of encoder(x̃_u ⊙ c_k). Checks the model's sparse
/// diag(c_k)·W route and its log-space mixture.
@Suite struct MacridVAEScoreTests {
    @Test func scoresAreTheConceptMixture() throws {
        let (split, d) = try blockFixture()
        let data = TrainingData(dataset: d, split: split)
        let (size, concepts, hidden, tau) = (3, 2, 5, 0.5)
        var model = try Fixtures.model(MacridVAE.self, ["embedding_size": .int(size), "kfac": .int(concepts),
                                                        "encoder_hidden_size": .list([.int(hidden)]), "tau": .double(tau)])
        var rng = SeededGenerator(seed: 5)
        model.parameters = model.prepare(data, context: FitContext(seed: 5, compute: Compute(threads: 1), logger: Logger(label: "test")), rng: &rng)
        let users: [Int32] = [0, 9]
        var block = Matrix(rows: 0, columns: 0)
        model.scores(for: users[...], into: &block, compute: Compute(threads: 1))

        let p = model.parameters, n = data.itemCount
        func unit(_ v: [Double]) -> [Double] { let l = v.reduce(0) { $0 + $1 * $1 }.squareRoot(); return v.map { $0 / l } }
        func row(_ m: Matrix, _ r: Int) -> [Double] { m.row(r).map(Double.init) }
        func dot(_ a: [Double], _ b: [Double]) -> Double { zip(a, b).reduce(0) { $0 + $1.0 * $1.1 } }
        let items = (0..<n).map { unit(row(p["item_embedding"], $0)) }
        let cores = (0..<concepts).map { unit(row(p["concept_embedding"], $0)) }
        let weights = items.map { item -> [Double] in
            let e = cores.map { exp(dot(item, $0) / tau) }
            return e.map { $0 / e.reduce(0, +) }
        }
        let (w0, b0, w1, b1) = (p["encoder.0.weight"], p["encoder.0.bias"], p["encoder.1.weight"], p["encoder.1.bias"])
        for (r, u) in users.enumerated() {
            let history = data.trainMatrix.entries(ofRow: Int(u)).map { Int(data.trainMatrix.columnIndices[$0]) }
            let x = 1 / Double(history.count).squareRoot()
            let mus = (0..<concepts).map { k -> [Double] in
                let a = (0..<hidden).map { j in history.reduce(Double(b0[0, j])) { $0 + x * weights[$1][k] * Double(w0[$1, j]) } }
                let h = (0..<size).map { j in (0..<hidden).reduce(Double(b1[0, j])) { $0 + Foundation.tanh(a[$1]) * Double(w1[$1, j]) } }
                return unit(h)
            }
            for i in 0..<n {
                let expected = log((0..<concepts).reduce(0.0) { $0 + weights[i][$1] * exp(dot(mus[$1], items[i]) / tau) })
                #expect(abs(Double(block[r, i]) - expected) < 1e-4, "user \(u) item \(i): \(block[r, i]) vs \(expected)")
            }
        }
    }
}
