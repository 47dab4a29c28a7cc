import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// The factorisation machine's terms over context-aware inputs (Rendle 2010), shared by
/// the models built on it (FM itself, DeepFM's FM part):
///
///     z_FM(u, i) = b + Σ_f w_f + ½ (‖Σ_f e_f‖² − Σ_f ‖e_f‖²)
///
/// Its parameters are "embedding" (the e rows), "first_order" (w) and "bias" (b). Full
/// ranking splits z into a user part, an item part and ⟨S_u, S_i⟩ (S: a side's Σ e_f), so
/// every user × every item is one GEMM of width `embeddingSize` + 2.
public struct FactorizationMachine: Sendable {
    /// The width d of every field's embedding.
    public let embeddingSize: Int

    /// An FM of width `embeddingSize`.
    public init(embeddingSize: Int) { self.embeddingSize = embeddingSize }

    /// The initial embedding, first-order and bias parameters (RecBole's initialisation).
    public func initialParameters(_ inputs: ContextInputs, rng: inout SeededGenerator) -> Parameters {
        var initial = Parameters()
        initial.add("embedding", inputs.table(width: embeddingSize, columns: embeddingSize, rng: &rng))
        initial.add("first_order", inputs.table(width: 1, columns: 1, rng: &rng))
        initial.add("bias", Matrix(rows: 1, columns: 1))
        return initial
    }

    /// z_FM(u, i) for a batch of pairs: the pairwise term is the bi-interaction's row sums.
    public func logits(_ inputs: ContextInputs, users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape) -> Variable {
        let pairwise = tape.sumRows(tape.biInteraction(p["embedding"]!, inputs.lookups(users: users, items: items, mean: true)))
        return tape.add(FirstOrderTerm.logits(inputs, users: users, items: items, p, tape: tape), pairwise)
    }

    /// The item tower (every item's rows, the global bias in its last column), built once for
    /// a whole evaluation pass; each batch builds its users' tower and takes one GEMM.
    public func preparedScores(_ inputs: ContextInputs, parameters: Parameters, compute: Compute) -> PreparedScores {
        var itemTower = tower(inputs, inputs.itemFields, entities: Array(0..<Int32(inputs.itemCount))[...], parameters: parameters,
                              compute: compute, scalarFirst: false)
        let width = embeddingSize + 2, bias = parameters["bias"].values[0]
        for i in 0..<itemTower.rows { itemTower.values[i * width + width - 1] += bias }
        return PreparedScores { [self, itemTower] users, block, compute in
            let userTower = tower(inputs, inputs.userFields, entities: users, parameters: parameters, compute: compute, scalarFirst: true)
            TwoTowerScores.score(users: userTower, items: itemTower, into: &block, compute: compute)
        }
    }

    /// One side's [S | own scalar | 1] rows: S = Σ e_f, scalar = first order + ½(‖S‖² − Σ ‖e_f‖²).
    func tower(_ inputs: ContextInputs, _ fields: [Int], entities: ArraySlice<Int32>, parameters: Parameters, compute: Compute,
               scalarFirst: Bool) -> Matrix {
        let table = parameters["embedding"], d = embeddingSize
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
