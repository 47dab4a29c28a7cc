import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// FFM (Juan et al. 2016, "Field-aware Factorization Machines for CTR Prediction"), as
/// RecBole 1.2.1's `FFM` trains it: every feature keeps one vector per field group, and a
/// pair of features meets through the vectors each keeps for the other's group.
///
///     e_f→G = pooled embedding of feature f in its table for group G
///     z(u, i) = b + Σ_f w_f + Σ_{f<g} ⟨e_f→G(g), e_g→G(f)⟩        (G(f): f's group)
///     loss = BCE(σ(z), label) over positives and drawn negatives (uniform by default)   (Adam)
///
/// `fields` null (RecBole's default) puts every feature in a group of its own. Full ranking
/// splits z into user pairs, item pairs and the |U|·|I| cross pairs, whose vectors are
/// concatenated so that every user × every item is one GEMM of width |U|·|I|·d + 2.
public struct FFM: ContextModel, ScoresWhenPrepared {
    public static let name = "FFM"
    public static let summary = "Field-aware factorization machine: one vector per feature and field group, trained pointwise on sampled negatives"
    public static let kind = ModelKind.factorisation
    public static let family = ModelFamily.contextAware
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(10),
        SharedKeys.fieldGroups,
    ]
    /// Every column its own group, and the ids in one group with the features in another
    /// (the test fixture's columns).
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3)],
        ["embedding_size": .int(3), "fields": .map(["0": .list([.string("user_id"), .string("item_id")]),
                                                    "1": .list([.string("age"), .string("genre"), .string("price")])])],
    ]

    let embeddingSize: Int
    let fieldGroups: [String: [String]]?
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var inputs: ContextInputs?
    public var sampler: PointwiseSampler?
    /// The group of each feature, numbered 0…
    var group: [Int] = []
    var groupCount: Int { (group.max() ?? -1) + 1 }

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...1024)
        fieldGroups = try parameters.groups("fields")
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        let inputs = prepareInputs(data, context: context)
        let grouping = Self.groups(inputs.features.fields.map(\.name), fieldGroups)
        group = grouping.groups
        for note in grouping.notes { context.logger.notice("\(Self.name): \(note)") }
        var initial = Parameters()
        initial.add("embedding", inputs.table(width: embeddingSize, columns: groupCount * embeddingSize, rng: &rng))
        initial.add("first_order", inputs.table(width: 1, columns: 1, rng: &rng))
        initial.add("bias", Matrix(rows: 1, columns: 1))
        return initial
    }

    /// Each feature's group: its own (null), or the group listing it (groups in name order;
    /// a feature no group lists gets a group of its own, where RecBole would stop with a
    /// KeyError), with notes on what `fields` did not match.
    public static func groups(_ features: [String], _ groups: [String: [String]]?) -> (groups: [Int], notes: [String]) {
        guard let groups else { return (Array(features.indices), []) }
        let names = groups.keys.sorted()
        var next = names.count, notes: [String] = []
        let numbered = features.map { feature -> Int in
            if let g = names.firstIndex(where: { groups[$0]!.contains(feature) }) { return g }
            notes.append("fields lists no group for the model input '\(feature)': it is a group of its own")
            next += 1
            return next - 1
        }
        for name in names { for column in groups[name]! where !features.contains(column) {
            notes.append("fields group \(name) lists '\(column)', which is not a model input (inputs: \(features.joined(separator: ", ")))")
        } }
        // Renumber densely: a group that matched nothing takes no vectors.
        let used = Array(Set(numbered)).sorted()
        return (numbered.map { used.firstIndex(of: $0)! }, notes)
    }

    /// z(u, i) for each listed pair, pair of features by pair (training, and the reference
    /// the fast scorer is tested against).
    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout _: inout SeededGenerator?) -> Variable {
        let inputs = inputs!, d = embeddingSize, table = p["embedding"]!
        let embedded = (0..<inputs.fieldCount).map { tape.pooledLookup(table, [inputs.lookup($0, users: users, items: items, mean: true)]) }
        let pairs = (0..<inputs.fieldCount).flatMap { f in ((f + 1)..<inputs.fieldCount).map { g in SlicePair(f, group[g] * d, g, group[f] * d) } }
        let firstOrder = tape.add(tape.pooledLookup(p["first_order"]!, inputs.lookups(users: users, items: items, mean: false)),
                                  tape.gather(p["bias"]!, rows: [Int32](repeating: 0, count: users.count)))
        return tape.add(firstOrder, tape.sliceDots(embedded, pairs, width: d))
    }

    /// The item tower (every item's rows, the global bias in its last column), built once for
    /// a whole evaluation pass; each batch builds its users' tower and takes one GEMM.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let inputs = inputs!
        var itemTower = tower(inputs.itemFields, other: inputs.userFields, entities: Array(0..<Int32(inputs.itemCount))[...],
                              compute: compute, userSide: false)
        let width = itemTower.columns, bias = parameters["bias"].values[0]
        for i in 0..<itemTower.rows { itemTower.values[i * width + width - 1] += bias }
        return PreparedScores { [self, itemTower] users, block, compute in
            let userTower = tower(inputs.userFields, other: inputs.itemFields, entities: users, compute: compute, userSide: true)
            TwoTowerScores.score(users: userTower, items: itemTower, into: &block, compute: compute)
        }
    }

    /// One side's tower: for each (user feature f, item feature g), in that order, the vector
    /// this side's feature keeps for the other's group; then the side's own scalar (first
    /// order + its within-side pairs).
    func tower(_ own: [Int], other: [Int], entities: ArraySlice<Int32>, compute: Compute, userSide: Bool) -> Matrix {
        let inputs = inputs!, d = embeddingSize, table = parameters["embedding"], width = groupCount * d
        let embedded = Dictionary(uniqueKeysWithValues: own.map { ($0, inputs.pooled($0, entities: entities, table: table, compute: compute)) })
        var scalar = inputs.pooled(own, entities: entities, table: parameters["first_order"], mean: false, compute: compute).values
        for (k, f) in own.enumerated() {
            for g in own[(k + 1)...] {
                for r in 0..<entities.count {
                    let a = embedded[f]!.values[r * width + group[g] * d..<r * width + (group[g] + 1) * d]
                    let b = embedded[g]!.values[r * width + group[f] * d..<r * width + (group[f] + 1) * d]
                    scalar[r] += zip(a, b).reduce(0) { $0 + $1.0 * $1.1 }
                }
            }
        }
        let pairs = userSide ? own.flatMap { f in other.map { (f, $0) } } : other.flatMap { u in own.map { ($0, u) } }
        var cross = Matrix(rows: entities.count, columns: pairs.count * d)
        for (k, (mine, theirs)) in pairs.enumerated() {
            for r in 0..<entities.count {
                let from = r * width + group[theirs] * d
                cross.values.replaceSubrange(r * cross.columns + k * d..<r * cross.columns + (k + 1) * d,
                                             with: embedded[mine]!.values[from..<from + d])
            }
        }
        return TwoTowerScores.tower(cross: cross, scalar: scalar, scalarFirst: userSide)
    }
}
