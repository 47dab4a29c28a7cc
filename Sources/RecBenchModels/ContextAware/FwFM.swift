import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// FwFM (Pan et al. 2018, "Field-weighted Factorization Machines"), as RecBole 1.2.1's `FwFM`
/// computes it: FM's pairwise term with one weight per field pair.
///
///     z(u, i) = b + Σ_f w_f + Σ_k dropout(Σ_{f<g} r_fg · e_f ⊙ e_g)_k
///     loss = BCE(σ(z), label) over positives and drawn negatives (uniform by default)
///
/// RecBole 1.2.1 draws r ~ N(0, 1) as a plain tensor, not a parameter: the optimiser never
/// updates it, so it stays at its random draw. recbench keeps that (r is drawn once per fit
/// and fixed); the paper learns r. `fields` (RecBole's grouping of features into fields) is
/// not built: every feature is its own field, RecBole's default.
///
/// Full ranking: pairs within the user's fields and within the item's are each side's own
/// scalar; the cross pairs are ⟨[e_f]_{f∈user}, [Σ_{g∈item} r_fg e_g]_f⟩, one GEMM of two towers.
public struct FwFM: ContextModel, ScoresWhenPrepared {
    public static let name = "FwFM"
    public static let summary = "Field-weighted FM: each field pair's interaction scaled by its own weight (Pan et al. 2018)"
    public static let kind = ModelKind.factorisation
    public static let family = ModelFamily.contextAware
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(10),
        SharedKeys.dropoutProb(0),
        SharedKeys.fieldGroups,
    ]
    public static let testSettings: [[String: ConfigValue]] = [["embedding_size": .int(3), "dropout_prob": .double(0.2)]]

    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var inputs: ContextInputs?
    public var sampler: PointwiseSampler?
    let embeddingSize: Int, dropout: Float
    /// r: fields × fields, read above the diagonal (fixed, as RecBole's).
    var pairWeights = Matrix(rows: 0, columns: 0)

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...1024)
        dropout = Float(try parameters.double("dropout_prob", in: 0...0.99))
        guard try parameters.groups("fields") == nil else {
            throw parameters.invalid("fields", "FwFM takes every feature as its own field (null): RecBole 1.2.1's grouping numbers features "
                + "in another order than its embeddings, so a grouped run would pair the wrong weights")
        }
    }

    /// Refuses a `float_seq` field before training: RecBole 1.2.1 counts it among the fields but
    /// gives it no field number, so its pair loop fails (a KeyError in `fwfm.py`).
    public mutating func fit(_ data: TrainingData, context: FitContext) throws {
        if let field = FeatureFields(data.dataset).fields.first(where: \.floatSequence) {
            throw RecBenchError.config("numerical_features", "FwFM cannot pair the float_seq column \(field.name) (\(field.file)): RecBole 1.2.1 "
                                       + "counts it as a field but numbers none for it; leave it out of numerical_features")
        }
        trainingSummary = try Trainer(context: context).train(&self, data: data)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        let inputs = prepareInputs(data, context: context)
        var initial = Parameters()
        initial.add("embedding", inputs.table(width: embeddingSize, columns: embeddingSize, rng: &rng))
        FirstOrderTerm.initialize(&initial, inputs, rng: &rng)
        pairWeights = Initializer.normal(rows: inputs.fieldCount, columns: inputs.fieldCount, std: 1, rng: &rng)
        return initial
    }

    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout rng: inout SeededGenerator?) -> Variable {
        let fields = inputs!.fieldCount
        let e = inputs!.embedded(users: users, items: items, p, tape: tape)
        let pairs = (0..<fields).flatMap { f in ((f + 1)..<fields).map { g in SlicePair(f, 0, g, 0, weight: pairWeights[f, g]) } }
        var interaction = tape.sliceProducts(e, pairs, width: embeddingSize)
        if var draws = rng, dropout > 0 {
            interaction = Dropout.apply(interaction, rate: dropout, tape: tape, rng: &draws)
            rng = draws
        }
        return tape.add(FirstOrderTerm.logits(inputs!, users: users, items: items, p, tape: tape), tape.sumRows(interaction))
    }

    /// Per training row: every field pair's product (F²/2 × d); validation: users × items × (user fields × d + 2).
    public func cost(_ s: WorkShape) -> ModelCost? {
        let fields = Double(inputs?.fieldCount ?? 2), width = Double((inputs?.userFields.count ?? 1) * embeddingSize + 2)
        let flops = s.pointwiseRows * 3 * fields * (fields - 1) / 2 * Double(embeddingSize) + 2 * Double(s.users) * Double(s.items) * width
        return ModelCost(nominal: flops, executed: flops)
    }

    /// The first-order towers, and the pair term's towers: [e_f]_{f∈user} | own pairs, and
    /// [Σ_g r_fg e_g]_f | own pairs.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let wide = FirstOrderTerm.preparedScores(inputs!, parameters: parameters, compute: compute)
        let items = tower(inputs!.itemFields, entities: Array(0..<Int32(inputs!.itemCount))[...], compute: compute)
        return PreparedScores { [self] users, block, compute in
            var pairs = Matrix(rows: users.count, columns: block.columns)
            TwoTowerScores.score(users: tower(inputs!.userFields, entities: users, compute: compute), items: items, into: &pairs, compute: compute)
            wide.scores(for: users, into: &block, compute: compute)
            for k in 0..<block.values.count { block.values[k] += pairs.values[k] }
        }
    }

    /// One side's pair tower: the cross part (user side: its fields' embeddings side by side;
    /// item side: for each user field f, Σ_g r_fg e_g), then its own pairs' sum as the scalar.
    func tower(_ fields: [Int], entities: ArraySlice<Int32>, compute: Compute) -> Matrix {
        let inputs = inputs!, d = embeddingSize, userSide = fields == inputs.userFields
        let e = Dictionary(uniqueKeysWithValues: fields.map { ($0, inputs.pooled($0, entities: entities, table: parameters["embedding"], compute: compute)) })
        let weight = { (f: Int, g: Int) in self.pairWeights[min(f, g), max(f, g)] }
        var cross = Matrix(rows: entities.count, columns: inputs.userFields.count * d), own = [Float](repeating: 0, count: entities.count)
        for r in 0..<entities.count {
            for (slot, f) in inputs.userFields.enumerated() {
                for k in 0..<d {
                    cross.values[(r * inputs.userFields.count + slot) * d + k] = userSide
                        ? e[f]!.values[r * d + k] : fields.reduce(0) { $0 + weight(f, $1) * e[$1]!.values[r * d + k] }
                }
            }
            for (a, f) in fields.enumerated() {
                for g in fields[(a + 1)...] { for k in 0..<d { own[r] += weight(f, g) * e[f]!.values[r * d + k] * e[g]!.values[r * d + k] } }
            }
        }
        return TwoTowerScores.tower(cross: cross, scalar: own, scalarFirst: userSide)
    }
}
