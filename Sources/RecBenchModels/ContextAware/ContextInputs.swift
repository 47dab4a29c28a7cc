import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// What context-aware models (FM, FFM, DeepFM) read: the dataset's feature fields, each
/// field's bags re-indexed into one table that stacks every field's embedding rows, and the
/// pieces every such model shares (RecBole's initialisation, per-batch bags, two-tower
/// scoring by one GEMM).
public struct ContextInputs: Sendable {
    /// The fields and what was noted while building them.
    public let features: FeatureFields
    /// Per field: entities × total rows, mean-pooling weights (second-order embeddings).
    public let means: [SparseMatrix]
    /// Per field: entities × total rows, the first-order term's weights, as RecBole's
    /// `FMFirstOrderLinear` pools: a `token_seq` summed, a `float_seq` averaged.
    public let sums: [SparseMatrix]
    /// The fields of each side, in order.
    public let userFields: [Int], itemFields: [Int]

    /// Inputs over `features`.
    public init(_ features: FeatureFields) {
        self.features = features
        let total = features.totalCardinality, offsets = features.offsets
        func stacked(_ m: SparseMatrix, _ offset: Int) -> SparseMatrix {
            SparseMatrix(rows: m.rows, columns: total, rowStarts: m.rowStarts,
                         columnIndices: m.columnIndices.map { $0 + Int32(offset) }, values: m.values)
        }
        means = zip(features.means, offsets).map(stacked)
        sums = features.fields.indices.map { f in stacked(features.fields[f].type == .float ? features.means[f] : features.sums[f], offsets[f]) }
        userFields = features.indices(of: .user)
        itemFields = features.indices(of: .item)
    }

    /// Number of fields.
    public var fieldCount: Int { features.fields.count }

    /// Items in the catalogue: the entities of an item field's bags (the item id is always one).
    public var itemCount: Int { means[itemFields[0]].rows }

    /// Field `f`'s lookup for a batch of (user, item) pairs: its bags, and per pair the
    /// user's row for a user field, the item's for an item field (`Tape.pooledLookup`).
    public func lookup(_ f: Int, users: [Int32], items: [Int32], mean: Bool) -> (bags: SparseMatrix, rows: [Int32]) {
        ((mean ? means : sums)[f], features.fields[f].side == .user ? users : items)
    }

    /// Every field's lookup (summed by `Tape.pooledLookup`: Σ_f e_f, or the first-order sum).
    public func lookups(users: [Int32], items: [Int32], mean: Bool) -> [(bags: SparseMatrix, rows: [Int32])] {
        (0..<fieldCount).map { lookup($0, users: users, items: items, mean: mean) }
    }

    /// An embedding table over every field's rows, `columns` wide, initialised as RecBole's
    /// xavier-normal does it per `nn.Embedding`: the token fields share one table, each
    /// `token_seq` field has its own, the float fields share one; `width` is the embedding
    /// width each table was declared with (`columns` may hold several, FFM's per field).
    public func table(width: Int, columns: Int, rng: inout SeededGenerator) -> Matrix {
        let fields = features.fields, offsets = features.offsets
        var table = Matrix(rows: features.totalCardinality, columns: columns)
        for group in tableGroups {
            let rows = group.reduce(0) { $0 + fields[$1].declaredRows }
            let std = (2 / Float(rows + width)).squareRoot()
            for f in group {
                let block = Initializer.normal(rows: fields[f].cardinality, columns: columns, std: std, rng: &rng)
                let start = offsets[f] * columns
                table.values.replaceSubrange(start..<start + block.values.count, with: block.values)
            }
        }
        return table
    }

    /// The fields of each of RecBole's `nn.Embedding` tables: the token fields share one, each
    /// `token_seq` field has its own, the float fields share one (empty groups left out).
    public var tableGroups: [[Int]] {
        let fields = features.fields
        var groups: [[Int]] = [fields.indices.filter { fields[$0].type == .token }]
        groups += fields.indices.filter { fields[$0].type == .tokenSequence }.map { [$0] }
        groups.append(fields.indices.filter { fields[$0].type == .float })
        return groups.filter { !$0.isEmpty }
    }

    /// The stacked table's rows of each of RecBole's tables (`tableGroups`).
    public var tableRows: [[Int32]] {
        tableGroups.map { group in group.flatMap { f in (0..<features.fields[f].cardinality).map { Int32(features.offsets[f] + $0) } } }
    }

    /// For a batch of `users`, the rows of one side's fields pooled through `table`, summed
    /// over fields (pass `fields` of one side).
    public func pooled(_ fields: [Int], entities: ArraySlice<Int32>, table: Matrix, mean: Bool, compute: Compute) -> Matrix {
        var out = Matrix(rows: entities.count, columns: table.columns)
        for f in fields {
            (mean ? means : sums)[f].multiply(rows: entities, by: table, into: &out, adding: true, compute: compute)
        }
        return out
    }

    /// One field's pooled rows for `entities`.
    public func pooled(_ f: Int, entities: ArraySlice<Int32>, table: Matrix, compute: Compute) -> Matrix {
        var out = Matrix(rows: entities.count, columns: table.columns)
        means[f].multiply(rows: entities, by: table, into: &out, compute: compute)
        return out
    }
}

extension ContextInputs {
    /// The pairs' field embeddings e_f from the table "embedding", one variable per field.
    public func embedded(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape) -> [Variable] {
        (0..<fieldCount).map { tape.pooledLookup(p["embedding"]!, [lookup($0, users: users, items: items, mean: true)]) }
    }

    /// The embeddings of `fields` (all by default) side by side, rows × fields·d: what
    /// concatenating `embedded`'s variables gives, as one op (an MLP's input).
    public func embeddedSideBySide(_ fields: [Int]? = nil, users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape) -> Variable {
        tape.pooledLookups(p["embedding"]!, sideBySide: (fields ?? Array(0..<fieldCount)).map { lookup($0, users: users, items: items, mean: true) })
    }
}

/// Scores of a user batch × every item as one GEMM: a model that splits its score into a
/// user-only part a_u, an item-only part c_i and a cross term ⟨x_u, y_i⟩ hands the towers
/// [x_u | a_u | 1] and [y_i | 1 | c_i], and `block = U · Iᵀ` is the whole score (no user
/// row is ever repeated per item).
public enum TwoTowerScores {
    /// The tower rows `[cross | own | other]` (own: this side's scalar; other: 1).
    public static func tower(cross: Matrix, scalar: [Float], scalarFirst: Bool) -> Matrix {
        let k = cross.columns
        var out = Matrix(rows: cross.rows, columns: k + 2)
        for r in 0..<cross.rows {
            for j in 0..<k { out.values[r * (k + 2) + j] = cross.values[r * k + j] }
            out.values[r * (k + 2) + k] = scalarFirst ? scalar[r] : 1
            out.values[r * (k + 2) + k + 1] = scalarFirst ? 1 : scalar[r]
        }
        return out
    }

    /// `block = users · itemsᵀ`.
    public static func score(users: Matrix, items: Matrix, into block: inout Matrix, compute: Compute) {
        BLAS.gemm(users, items, transposeB: true, into: &block, compute: compute)
    }
}

/// A context-aware pointwise model (FM, FFM, DeepFM): it also keeps the feature inputs.
public protocol ContextModel: PointwiseModel {
    /// The fields and bags (set by `prepareInputs`).
    var inputs: ContextInputs? { get set }
}

extension ContextModel {
    /// Builds the inputs and the sampler for `data` and logs what the fields left out.
    public mutating func prepareInputs(_ data: TrainingData, context: FitContext) -> ContextInputs {
        let inputs = ContextInputs(FeatureFields(data.dataset))
        for note in inputs.features.notes { context.logger.notice("\(Self.name): \(note)") }
        self.inputs = inputs
        prepareSampler(data, context: context)
        return inputs
    }
}

/// Full ranking for the part of a context-aware model whose layers mix user and item fields per
/// pair (xDeepFM's CIN, AutoInt's attention): the items' field embeddings once per pass; per
/// user, tiles of items whose pairs' embeddings (the user's rows repeated, the items' rows) run
/// through the part on a tape of constants (no pullbacks kept), its GEMMs over the whole tile.
public struct PairTileScores: Sendable {
    let inputs: ContextInputs, table: Matrix, items: [Int: Matrix], tileItems: Int
    /// The part: one logit per pair from the pairs' field embeddings (B × d each, field order).
    let part: @Sendable ([Variable], Tape) -> Variable

    /// Embeddings from `table`, tiles of `tileItems` items.
    public init(_ inputs: ContextInputs, table: Matrix, tileItems: Int, compute: Compute, part: @escaping @Sendable ([Variable], Tape) -> Variable) {
        let all = Array(0..<Int32(inputs.itemCount))[...]
        self.inputs = inputs; self.table = table; self.tileItems = tileItems; self.part = part
        items = Dictionary(uniqueKeysWithValues: inputs.itemFields.map { ($0, inputs.pooled($0, entities: all, table: table, compute: compute)) })
    }

    /// Adds the part's logit for each of `users` × every item to `block`.
    public func addScores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        let user = Dictionary(uniqueKeysWithValues: inputs.userFields.map { ($0, inputs.pooled($0, entities: users, table: table, compute: compute)) })
        precondition(block.rows == users.count && block.columns == inputs.itemCount, "PairTileScores: block is \(block.rows)×\(block.columns)")
        let columns = block.columns, d = table.columns
        block.updateRows(compute: compute) { row, out in
            for start in stride(from: 0, to: columns, by: tileItems) {
                let tile = start..<min(columns, start + tileItems), tape = Tape(compute: .serial)
                let e = (0..<inputs.fieldCount).map { f in
                    tape.constant(user[f].map { Matrix(repeatingRow: $0.rows(row..<row + 1), count: tile.count, compute: .serial) }
                                  ?? Matrix(rows: tile.count, columns: d, values: Array(items[f]!.values[tile.lowerBound * d..<tile.upperBound * d])))
                }
                let z = part(e, tape).value.values
                for (j, i) in tile.enumerated() { out[i] += z[j] }
            }
        }
    }
}
