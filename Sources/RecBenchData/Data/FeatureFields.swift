import Linalg
import RecBenchSupport

/// Which entity a model input field describes.
public enum FeatureSide: String, Sendable, Codable, CaseIterable {
    case user, item
}

/// One input field of a context-aware model (a field of RecBole's `ContextRecommender`).
public struct FeatureField: Sendable, Equatable {
    /// The column name (`user_id`, `age`, `class`, …).
    public let name: String
    /// The entity it describes.
    public let side: FeatureSide
    /// `token`, `token_seq` or `float` (a `numerical_features` column).
    public let type: FieldType
    /// The file its values come from.
    public let file: String
    /// Embedding rows the field owns: distinct values + 1 (row 0 is padding: no row in the
    /// side file, an empty value); 1 for a float field.
    public let cardinality: Int
    /// A `float_seq` column (a float field whose entities hold several values).
    public var floatSequence = false

    /// The rows RecBole 1.2.1 declares in the field's embedding table, which set its xavier
    /// std: a float field's 2 (its bucket count without `discretization`; row 1 is read), else
    /// `cardinality`.
    public var declaredRows: Int { type == .float ? 2 : cardinality }
}

/// Every model input field of a dataset and, per field, the value of every user or item as a
/// bag of embedding rows: one row for a token, the sequence's rows for a `token_seq`, row 0
/// weighted by the value for a float. Built as RecBole 1.2.1 builds its context-aware inputs:
/// the user and item ids are fields; every loaded `.user` / `.item` column that `unused_col`
/// does not exclude is one; a float column is one only when `numerical_features` lists it.
public struct FeatureFields: Sendable {
    /// The fields, user side first, each side in file order with its id first.
    public let fields: [FeatureField]
    /// Per field, an entities × cardinality matrix (users or items by the field's side) whose
    /// row holds the entity's embedding rows with weight 1 (a float: its value), so a product
    /// with an embedding table sum-pools a sequence (RecBole's first-order term).
    public let sums: [SparseMatrix]
    /// The same with each sequence's weights divided by its length: the product mean-pools
    /// (RecBole's second-order embeddings); an empty sequence is a zero row.
    public let means: [SparseMatrix]
    /// What the caller should be told once (columns left out, entities without a row).
    public let notes: [String]

    /// Indices of the fields of one side, in order.
    public func indices(of side: FeatureSide) -> [Int] { fields.indices.filter { fields[$0].side == side } }

    /// The first embedding row of each field in one table that stacks every field's rows.
    public var offsets: [Int] { fields.reduce(into: [0]) { $0.append($0.last! + $1.cardinality) }.dropLast() }

    /// Total embedding rows over all fields.
    public var totalCardinality: Int { fields.reduce(0) { $0 + $1.cardinality } }

    /// The fields of `dataset` (see the type's summary).
    public init(_ dataset: Dataset) {
        var fields: [FeatureField] = [], sums: [SparseMatrix] = [], means: [SparseMatrix] = [], notes: [String] = []
        for side in FeatureSide.allCases {
            let count = side == .user ? dataset.userCount : dataset.itemCount
            let idName = side == .user ? dataset.userField : dataset.itemField
            let ids = SparseMatrix(rows: count, columns: count + 1, rowIndices: (0..<Int32(count)).map { $0 },
                                   columnIndices: (0..<Int32(count)).map { $0 + 1 })
            fields.append(FeatureField(name: idName, side: side,
                                       type: .token, file: "\(dataset.name).inter", cardinality: count + 1))
            sums.append(ids); means.append(ids)
            guard let (table, rowIDs) = side == .user ? dataset.userFeatures : dataset.itemFeatures else { continue }
            let file = table.path.split(separator: "/").last.map(String.init) ?? table.path
            let covered = Set(rowIDs.filter { $0 >= 0 }).count
            if covered < count {
                notes.append("\(count - covered) of \(count) \(side)s have no row in \(file): their \(side) features are padding")
            }
            for column in table.fields where column.name != idName {
                guard dataset.isModelInput(column.name, of: side.rawValue) else { continue }
                guard let built = Self.column(column, of: table, rows: rowIDs, count: count, dataset: dataset) else {
                    notes.append("\(file) column \(column.name) (\(column.type.rawValue)) is not a model input: "
                                 + "only numerical_features make float columns inputs, as in RecBole")
                    continue
                }
                var field = FeatureField(name: column.name, side: side, type: built.type, file: file, cardinality: built.sums.columns)
                if case .floatSequence = table.columns[column.name]! { field.floatSequence = true }
                fields.append(field)
                sums.append(built.sums); means.append(built.means)
            }
        }
        for name in dataset.numericalFeatures where !fields.contains(where: { $0.name == name }) && dataset.isModelInput(name, of: "inter") {
            notes.append("numerical_features lists the .inter column \(name), which is not a model input: "
                         + "full ranking scores (user, item) pairs that have no interaction context")
        }
        self.fields = fields; self.sums = sums; self.means = means; self.notes = notes
    }

    /// One side-file column as bags per entity (nil: a float column that is no input).
    static func column(_ field: AtomicField, of table: AtomicTable, rows rowIDs: [Int32], count: Int,
                       dataset: Dataset) -> (type: FieldType, sums: SparseMatrix, means: SparseMatrix)? {
        let numerical = dataset.numericalFeatures.contains(field.name)
        switch table.columns[field.name]! {
        case .token(let values):
            // A missing row or value (empty, or a text pandas reads as missing: RecBole's `_fill_nan`)
            // is the padding id, a learned row as in RecBole.
            let missing = AtomicFileReader.pandasMissing
            let bags = Bags(values.values.map { missing.contains($0) ? [] : [$0] }, rows: rowIDs, count: count, padding: true)
            return (.token, bags.matrix(mean: false), bags.matrix(mean: false))
        case .tokenSequence(let values):
            let bags = Bags(values, rows: rowIDs, count: count)   // a field pandas reads as missing is empty already (the reader)
            return (.tokenSequence, bags.matrix(mean: false), bags.matrix(mean: true))
        case .float(let values) where numerical:
            let m = floatBags(values.map { $0.isNaN ? [] : [$0] }, rows: rowIDs, count: count, mean: false, fillWithMean: true)
            return (.float, m, m)
        case .floatSequence(let values) where numerical:
            return (.float, floatBags(values, rows: rowIDs, count: count, mean: false), floatBags(values, rows: rowIDs, count: count, mean: true))
        default:
            return nil
        }
    }

    /// A float column: each entity's values (summed or averaged) on its only embedding row. With
    /// `fillWithMean` (a scalar column), an entity without a value (no row, an empty field) gets
    /// the mean over the entities that have one, as RecBole's `_fill_nan` fills a float column.
    static func floatBags(_ values: [[Double]], rows rowIDs: [Int32], count: Int, mean: Bool, fillWithMean: Bool = false) -> SparseMatrix {
        var value = [Float](repeating: 0, count: count), seen = [Bool](repeating: false, count: count)
        for (r, entity) in rowIDs.enumerated() where entity >= 0 && !seen[Int(entity)] && !values[r].isEmpty {
            let total = values[r].reduce(0, +)
            value[Int(entity)] = Float(mean ? total / Double(values[r].count) : total)
            seen[Int(entity)] = true
        }
        let given = (0..<count).filter { seen[$0] }
        if fillWithMean && !given.isEmpty && given.count < count {
            let fill = Float(given.reduce(0.0) { $0 + Double(value[$1]) } / Double(given.count))
            for e in 0..<count where !seen[e] { value[e] = fill }
        }
        let present = (0..<count).filter { value[$0] != 0 }
        return SparseMatrix(rows: count, columns: 1, rowIndices: present.map { Int32($0) },
                            columnIndices: [Int32](repeating: 0, count: present.count), values: present.map { value[$0] })
    }
}

/// Token bags per entity: values numbered 1… in order of first appearance; an entity's first
/// side-file row counts, later duplicates of its id are ignored. With `padding`, an entity
/// without a value gets id 0 (a token field); otherwise an empty bag (a sequence pools to 0).
struct Bags {
    var ids: [[Int32]]
    var cardinality: Int

    init(_ values: [[String]], rows rowIDs: [Int32], count: Int, padding: Bool = false) {
        var numbers: [String: Int32] = [:]
        ids = Array(repeating: padding ? [0] : [], count: count)
        var seen = [Bool](repeating: false, count: count)
        for (r, entity) in rowIDs.enumerated() where entity >= 0 && !seen[Int(entity)] {
            seen[Int(entity)] = true
            if values[r].isEmpty { continue }
            ids[Int(entity)] = values[r].map { token in
                if let n = numbers[token] { return n }
                let n = Int32(numbers.count + 1)
                numbers[token] = n
                return n
            }
        }
        cardinality = numbers.count + 1
    }

    /// Entities × cardinality, weight 1 per value (or 1 / length, when `mean`).
    func matrix(mean: Bool) -> SparseMatrix {
        var rows: [Int32] = [], columns: [Int32] = [], weights: [Float] = []
        for (entity, bag) in ids.enumerated() {
            for id in bag {
                rows.append(Int32(entity)); columns.append(id); weights.append(mean ? 1 / Float(bag.count) : 1)
            }
        }
        return SparseMatrix(rows: ids.count, columns: cardinality, rowIndices: rows, columnIndices: columns, values: weights)
    }
}
