import Foundation
import Logging
import Testing
import RecBenchCore
import Linalg

/// TransRec's full ranking (one GEMM and the item norms) against its distance formula,
/// β_j − ‖U_u + T + E_last − E_j‖, computed directly in double precision.
struct TransRecTests {
    @Test func fullRankingEqualsTheDistanceFormula() throws {
        let (split, d) = try blockFixture()
        var model = try Fixtures.model(TransRec.self, ["embedding_size": .int(5)])
        var rng = SeededGenerator(seed: 6)
        let context = FitContext(seed: 6, compute: Compute(threads: 1), logger: Logger(label: "test"))
        var parameters = model.prepare(TrainingData(dataset: d, split: split), context: context, rng: &rng)
        for name in parameters.names {   // T and β away from their initial zeros and scales
            parameters.update(name) { m in for i in m.values.indices { m.values[i] = Float(rng.nextUnitFloat() * 2 - 1) } }
        }
        model.parameters = parameters
        let sequences = try #require(model.sequences)
        let log = sequences.log
        let positions = Array(sequences.trainExamples.prefix(6))
        let queries = SequenceQueries(sequences: sequences, users: positions.map { log.users[Int($0)] }, ends: positions)
        var block = Matrix(rows: positions.count, columns: d.itemCount)
        model.scores(for: Array(0..<Int32(positions.count))[...], of: queries, into: &block, compute: Compute(threads: 2))
        let (u, e, b, t) = (parameters["user_embedding"], parameters["item_embedding"], parameters["bias"], parameters["T"])
        for (r, p) in positions.enumerated() {
            let user = Int(log.users[Int(p)]), last = Int(log.items[Int(p) - 1])
            for j in 0..<d.itemCount {
                let squared = (0..<5).reduce(0.0) { sum, k in
                    let x = Double(u[user, k]) + Double(t[0, k]) + Double(e[last, k]) - Double(e[j, k])
                    return sum + x * x
                }
                #expect(abs(Double(block[r, j]) - (Double(b[j, 0]) - squared.squareRoot())) < 1e-4, "row \(r), item \(j)")
            }
        }
    }
}
