import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// The `.item` columns a feature-rich sequential model reads (GRU4RecF's `selected_features`),
/// each as a bag of embedding rows per item, in RecBole's order: token fields, then token
/// sequences, then floats (each group in the order selected). The bags have one more row, the
/// padding item's, which is empty. Built as context-aware models' fields are (`FeatureFields`):
/// an item without a row in `.item` gets padding features, and a float column is an input
/// only when `numerical_features` lists it.
public struct SelectedItemFeatures: Sendable {
    public struct Field: Sendable {
        /// The column.
        public let name: String
        /// `token`, `token_seq` or `float`.
        public let type: FieldType
        /// Rows of its embedding table.
        public let cardinality: Int
        /// The rows RecBole declares for it (`FeatureField.declaredRows`: the init's std).
        public let declaredRows: Int
        /// (items + 1) × cardinality: each item's rows with weight 1 (a float: its value).
        public let sums: SparseMatrix
        /// The same, each bag's weights divided by its length.
        public let means: SparseMatrix
        /// A `float_seq` column (a float field whose items hold several values).
        public let floatSequence: Bool
    }

    /// The selected fields, in RecBole's order.
    public let fields: [Field]
    /// What to tell the user once (items without a row in `.item`).
    public let notes: [String]

    /// The columns `names` of `dataset`'s `.item` file; an unknown, unloaded, unused or
    /// non-numerical float column is an error naming the file and column.
    public init(_ dataset: Dataset, selected names: [String], model: String) throws {
        guard let (table, _) = dataset.itemFeatures else {
            throw RecBenchError.config("selected_features", "\(model) reads item features, but no \(dataset.name).item is loaded: "
                                       + "add `item: [item_id, \(names.joined(separator: ", "))]` to load_col")
        }
        let all = FeatureFields(dataset)
        let item = all.indices(of: .item).filter { all.fields[$0].name != dataset.itemField }
        for name in names where !item.contains(where: { all.fields[$0].name == name }) {
            throw Self.absent(name, table: table, dataset: dataset, model: model)
        }
        let order: [FieldType] = [.token, .tokenSequence, .float]
        let chosen = order.flatMap { type in names.compactMap { name in item.first { all.fields[$0].name == name && all.fields[$0].type == type } } }
        fields = chosen.map { f in
            Field(name: all.fields[f].name, type: all.fields[f].type, cardinality: all.fields[f].cardinality, declaredRows: all.fields[f].declaredRows,
                  sums: all.sums[f].appendingEmptyRow(), means: all.means[f].appendingEmptyRow(),
                  floatSequence: all.fields[f].floatSequence)
        }
        notes = all.notes.filter { $0.contains("items have no row") }
    }

    /// Why a selected column is not an input.
    private static func absent(_ name: String, table: AtomicTable, dataset: Dataset, model: String) -> RecBenchError {
        let context = "selected_features of \(model)"
        guard let field = table.header.first(where: { $0.name == name }) else {
            let columns = table.header.map(\.name).filter { $0 != dataset.itemField }
            let choice = columns.first.map { "; choose among them, e.g. --set 'selected_features=[\($0)]'" } ?? ""
            return RecBenchError.file(table.path, field: name, "no such column (\(context))\(Suggestion.hint(for: name, in: columns)); "
                                      + "its columns: \(columns.joined(separator: ", "))\(choice)")
        }
        if !table.fields.contains(where: { $0.name == name }) {
            return RecBenchError.file(table.path, field: name, "column not loaded (\(context)): add it to load_col.item")
        }
        if !dataset.isModelInput(name, of: "item") {
            return RecBenchError.file(table.path, field: name, "unused_col.item lists this column, so it is no model input (\(context))")
        }
        return RecBenchError.file(table.path, field: name, "a \(field.type.rawValue) column is a model input only when numerical_features "
                                  + "lists it, as in RecBole (\(context)): add it to numerical_features or leave it out")
    }
}

extension SparseMatrix {
    /// The same rows and one more, empty.
    func appendingEmptyRow() -> SparseMatrix {
        SparseMatrix(rows: rows + 1, columns: columns, rowStarts: rowStarts + [rowStarts.last ?? 0], columnIndices: columnIndices, values: values)
    }
}
