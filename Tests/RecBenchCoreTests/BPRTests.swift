import Logging
import Testing
import RecBenchCore
import Linalg
import Autodiff

/// BPR's own tests: its lock-free SGD path (`hogwild: true`).
struct BPRTests {
    @Test func sharedMatrixRoundTripsOddWidths() {
        let m = Fixtures.randomMatrix(rows: 7, columns: 5, seed: 3)
        let shared = SharedMatrix(m)
        #expect(shared.matrix == m)
        var row: [Float] = [1, 2, 3, 4, 5, 6]   // one float more than a row: it must stay untouched
        row.withUnsafeBufferPointer { shared.write(row: 2, from: $0.baseAddress!) }
        let after = shared.matrix
        #expect((0..<5).map { after[2, $0] } == [1, 2, 3, 4, 5])
        #expect(after[1, 4] == m[1, 4] && after[3, 0] == m[3, 0])
        row = [Float](repeating: 0, count: 6)
        row.withUnsafeMutableBufferPointer { shared.read(row: 4, into: $0.baseAddress!) }
        #expect(Array(row[0..<5]) == (0..<5).map { m[4, $0] })
    }

    /// The step against the tape: one SGD step on −log σ(⟨p_u, q_i⟩ − ⟨p_u, q_j⟩) + λ/2 ‖rows‖².
    @Test(arguments: [Float(0), 0.5])
    func stepIsOneSGDStepOnThePairLoss(regularization λ: Float) {
        let (u, i, j, η): (Int32, Int32, Int32, Float) = (1, 2, 0, 0.1)
        let users = Fixtures.randomMatrix(rows: 3, columns: 5, seed: 4), items = Fixtures.randomMatrix(rows: 4, columns: 5, seed: 5)
        let tape = Tape(compute: .serial)
        let p = tape.parameter(users), q = tape.parameter(items)
        let pu = tape.gather(p, rows: [u])
        let loss = tape.affine(tape.mean(tape.logSigmoid(tape.sub(tape.rowDot(pu, tape.gather(q, rows: [i])),
                                                                    tape.rowDot(pu, tape.gather(q, rows: [j]))))), scale: -1)
        tape.backward(loss)
        let sharedP = SharedMatrix(users), sharedQ = SharedMatrix(items)
        let reported = HogwildStep(rate: η, regularization: λ, dimension: 5)(user: Int(u), positive: Int(i), negative: Int(j), sharedP, sharedQ)
        let (newP, newQ) = (sharedP.matrix, sharedQ.matrix)
        #expect(abs(reported - Double(loss.value.values[0])) < 1e-5)
        let touchedUsers: Set<Int> = [Int(u)], touchedItems: Set<Int> = [Int(i), Int(j)]
        for (after, before, grad, touched) in [(newP, users, p.grad!, touchedUsers), (newQ, items, q.grad!, touchedItems)] {
            for r in 0..<before.rows {
                for c in 0..<5 {
                    let decay = touched.contains(r) ? λ * before[r, c] : 0
                    let expected = before[r, c] - η * (grad[r, c] + decay)
                    #expect(abs(after[r, c] - expected) < 1e-6, "row \(r) column \(c): \(after[r, c]) vs \(expected)")
                }
            }
        }
    }

    @Test func hogwildBPRIsReproducibleOnOneThreadAndLearns() throws {
        let (split, d) = try blockFixture()
        let settings: [String: ConfigValue] = ["hogwild": .bool(true), "hogwild_learning_rate": .double(0.05)]
        let a = allScores(try fitted(BPR.self, on: split, dataset: d, settings), users: d.userCount, items: d.itemCount)
        let model = try fitted(BPR.self, on: split, dataset: d, settings)
        #expect(allScores(model, users: d.userCount, items: d.itemCount) == a)
        let r = Evaluator.evaluate(model, split: split, part: .test,
                                   settings: EvaluationSettings(metrics: ["MRR"], cutoffs: [1], historyMask: .seen), compute: Compute(threads: 2))
        #expect(r["mrr@1"] == 1)
    }

    @Test func hogwildBPRLearnsOnTwoThreads() throws {
        let (split, d) = try blockFixture()
        var values: [String: ConfigValue] = ["hogwild": .bool(true), "hogwild_learning_rate": .double(0.05)]
        for p in BPR.parameters where values[p.name] == nil { values[p.name] = p.defaultValue }
        let config = try Config(layers: [ConfigLayer(source: "test", values: values)], modelKeys: ModelRegistry.parameterNames)
        var model = try BPR(parameters: ModelParameters(config: config, declared: BPR.parameters))
        try model.fit(TrainingData(dataset: d, split: split),
                      context: FitContext(seed: 1, compute: Compute(threads: 2), logger: Logger(label: "test"),
                                          training: TrainingSettings(epochs: 60)))
        let r = Evaluator.evaluate(model, split: split, part: .test,
                                   settings: EvaluationSettings(metrics: ["MRR"], cutoffs: [1], historyMask: .seen), compute: Compute(threads: 2))
        #expect(r["mrr@1"] == 1)
    }
}
