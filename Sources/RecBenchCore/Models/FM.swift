import Linalg
import Autodiff

/// FM (Rendle 2010, "Factorization Machines"), as RecBole 1.2.1's `FM` trains it over the
/// user and item ids and every `.user` / `.item` feature field.
///
///     e_f = pooled embedding of field f (a token's row, a sequence's mean, a float × its row)
///     z(u, i) = b + Σ_f w_f + ½ (‖Σ_f e_f‖² − Σ_f ‖e_f‖²)        (w_f: first-order weights)
///     loss = BCE(σ(z), label) over positives and uniform negatives   (Adam)
///
/// Full ranking splits z into a user part, an item part and ⟨S_u, S_i⟩ (S: a side's Σ e_f),
/// so every user × every item is one GEMM of width `embedding_size` + 2.
public struct FM: ContextModel {
    public static let name = "FM"
    public static let summary = "Factorization machine over user, item and side-feature fields, trained pointwise on sampled negatives"
    public static let kind = ModelKind.factorisation
    public static let family = ModelFamily.contextAware
    public static let randomStreams = RandomStreams(initialization: 0xF1, batches: 6)
    public static let parameters: [ConfigKey] = [
        ConfigKey("embedding_size", "int", .int(10), "FM, FFM, DeepFM: dimension of every field's embedding."),
    ]

    let embeddingSize: Int
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var inputs: ContextInputs?
    public var sampler: PointwiseSampler?

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...1024)
    }

    /// An FM of this width (DeepFM's FM part).
    init(embeddingSize: Int) { self.embeddingSize = embeddingSize }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        let inputs = prepareInputs(data, context: context)
        var initial = Parameters()
        initial.add("embedding", inputs.table(width: embeddingSize, columns: embeddingSize, rng: &rng))
        initial.add("first_order", inputs.table(width: 1, columns: 1, rng: &rng))
        initial.add("bias", Matrix(rows: 1, columns: 1))
        return initial
    }

    /// z(u, i) for each listed pair, field by field (training, and the reference the fast
    /// scorer is tested against).
    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout _: inout SeededGenerator?) -> Variable {
        let inputs = inputs!
        let embedded = (0..<inputs.fieldCount).map { tape.pooledLookup(p["embedding"]!, [inputs.lookup($0, users: users, items: items, mean: true)]) }
        return logits(embedded: embedded, users: users, items: items, p, tape: tape)
    }

    /// z(u, i) from the pairs' field embeddings e_f (DeepFM shares them with its MLP).
    func logits(embedded: [Variable], users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape) -> Variable {
        let sum = embedded.dropFirst().reduce(embedded[0]) { tape.add($0, $1) }
        let squares = tape.sumRows(embedded.dropFirst().reduce(tape.square(embedded[0])) { tape.add($0, tape.square($1)) })
        let pairwise = tape.affine(tape.sub(tape.sumRows(tape.square(sum)), squares), scale: 0.5)
        let firstOrder = tape.pooledLookup(p["first_order"]!, inputs!.lookups(users: users, items: items, mean: false))
        return tape.add(tape.add(firstOrder, pairwise), tape.gather(p["bias"]!, rows: [Int32](repeating: 0, count: users.count)))
    }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        preparedForScoring(compute: compute).scores(for: users, into: &block, compute: compute)
    }

    /// The item tower (every item's rows, the global bias in its last column), built once for
    /// a whole evaluation pass; each batch builds its users' tower and takes one GEMM.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let inputs = inputs!
        var itemTower = tower(inputs.itemFields, entities: Array(0..<Int32(inputs.itemCount))[...], compute: compute, scalarFirst: false)
        let width = embeddingSize + 2, bias = parameters["bias"].values[0]
        for i in 0..<itemTower.rows { itemTower.values[i * width + width - 1] += bias }
        return PreparedScores { [self, itemTower] users, block, compute in
            let userTower = tower(inputs.userFields, entities: users, compute: compute, scalarFirst: true)
            TwoTowerScores.score(users: userTower, items: itemTower, into: &block, compute: compute)
        }
    }

    /// One side's [S | own scalar | 1] rows: S = Σ e_f, scalar = first order + ½(‖S‖² − Σ ‖e_f‖²).
    func tower(_ fields: [Int], entities: ArraySlice<Int32>, compute: Compute, scalarFirst: Bool) -> Matrix {
        let inputs = inputs!, table = parameters["embedding"], d = embeddingSize
        let sum = inputs.pooled(fields, entities: entities, table: table, mean: true, compute: compute)
        var scalar = inputs.pooled(fields, entities: entities, table: parameters["first_order"], mean: false, compute: compute).values
        for r in 0..<entities.count {
            let s = sum.values[r * d..<(r + 1) * d]
            scalar[r] += 0.5 * s.reduce(0) { $0 + $1 * $1 }
        }
        for f in fields {
            let e = inputs.pooled(f, entities: entities, table: table, compute: compute)
            for r in 0..<entities.count { scalar[r] -= 0.5 * e.values[r * d..<(r + 1) * d].reduce(0) { $0 + $1 * $1 } }
        }
        return TwoTowerScores.tower(cross: sum, scalar: scalar, scalarFirst: scalarFirst)
    }
}
