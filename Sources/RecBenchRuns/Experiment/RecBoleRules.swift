import RecBenchData
import RecBenchContract

/// RecBole 1.2.1's rules that depend on more than one key: its per-family quick-start defaults
/// (`properties/quick_start_config/`, loaded under the user's config files), the part recbench
/// applies, and the notes that name where a run departs from what RecBole would do with the
/// same config.
enum RecBoleRules {
    /// Sequential models split leave-one-out in time order (`sequential.yaml`); a config's own
    /// `eval_args` replaces this whole, as in RecBole. Its `repeatable: True` is recbench's
    /// sequential protocol already. The context-aware defaults are not applied: recbench ranks
    /// every item for every family and trains on sampled negatives (`notes` names them).
    static func layer(for family: ModelFamily) -> ConfigLayer? {
        guard family == .sequential else { return nil }
        let split: ConfigValue = .map(["LS": .string("valid_and_test")])
        return ConfigLayer(source: "RecBole's sequential defaults (quick_start_config/sequential.yaml)",
                           values: ["eval_args": .map(["split": split, "order": .string("TO"), "mode": .string("full")])])
    }

    /// Under labelled evaluation, RecBole's context-aware quick start (`context-aware.yaml`) for the keys no file sets:
    /// no drawn negatives (the models train on the labels), metrics [AUC, LogLoss], valid_metric AUC (when listed).
    static func labeledDefaults(_ config: Config) throws -> Config {
        guard case .map(let args) = config["eval_args"], try RankingMode.modes(args["mode"], origin: config.origin(of: "eval_args"))[.test] == .labeled
        else { return config }
        var c = config
        let source = "RecBole's context-aware default (quick_start_config/context-aware.yaml)"
        if !c.isSet("train_neg_sample_args") { c.set("train_neg_sample_args", to: .null, origin: source) }
        if !c.isSet("metrics") { c.set("metrics", to: .list([.string("AUC"), .string("LogLoss")]), origin: source) }
        if !c.isSet("valid_metric") {
            let listed = try c.stringList("metrics")
            c.set("valid_metric", to: .string(listed.first { $0.lowercased() == "auc" } ?? listed.first ?? "AUC"), origin: source)
        }
        return c
    }

    /// What RecBole 1.2.1 samples when no file sets `train_neg_sample_args` (nil: the key's
    /// own default): `context-aware.yaml` sets none.
    static func negatives(for family: ModelFamily) -> ConfigValue? {
        family == .contextAware ? .null : nil
    }

    /// One line for each RecBole rule this run departs from.
    static func notes(_ model: any Recommender.Type, config: Config, training: TrainingSettings, split: SplitSettings,
                      data: DataSettings, labeled: Bool = false) -> [String] {
        var notes: [String] = []
        let twoRatios = if case .ratio(let r) = split.strategy, r.count == 2 { data.benchmarkFilenames == nil } else { false }
        if twoRatios || data.benchmarkFilenames?.count == 2 {
            let key = twoRatios ? "eval_args.split" : "benchmark_filename"
            notes.append("\(key) (\(config.origin(of: twoRatios ? "eval_args" : key))) makes two parts: RecBole 1.2.1 needs three "
                         + "(train, valid, test) and stops (its data_preparation unpacks three); recbench ran without validation, "
                         + "so a trained model had no early stopping")
        }
        let negatives = config.origin(of: "train_neg_sample_args")
        if model.family == .sequential, config["loss_type"] == .string("CE"), training.negativesPerPositive > 0, negatives != "default" {
            notes.append("\(model.name) trains with CE over every item, so train_neg_sample_args (\(negatives)) draws no negatives "
                         + "(RecBole 1.2.1 refuses the pair: set it to ~, or loss_type: BPR to use it)")
        }
        if let note = datasetDefaultsNote(model, config: config) { notes.append(note) }
        if labeled, training.negativesPerPositive > 0 {
            notes.append("train_neg_sample_args (\(negatives)) draws negatives, so every train row trains as a positive whatever its label "
                         + "(RecBole 1.2.1 overwrites the labels too); set it to ~ to train on the labels")
        } else if model.family == .contextAware && !labeled {
            var unset: [String] = []
            if negatives == "default" { unset.append("train_neg_sample_args: ~ (it then stops on data without a label column: KeyError 'label')") }
            if !config.isSet("eval_args") { unset.append("eval_args {order: RO, group_by: ~, mode: labeled}") }
            if !config.isSet("metrics") || !config.isSet("valid_metric") { unset.append("metrics [AUC, LogLoss] with valid_metric AUC") }
            if !unset.isEmpty {
                notes.append("\(model.name): RecBole 1.2.1's context-aware defaults (quick_start_config/context-aware.yaml) are "
                             + unset.joined(separator: " and ") + "; recbench trains on \(training.negativesPerPositive) sampled negative(s) "
                             + "per positive and ranks every item (set these keys in the config to compare with a RecBole run)")
            }
        }
        return notes
    }

    /// For a dataset named `ml-100k` RecBole 1.2.1 also reads `properties/dataset/ml-100k.yaml` and, for some
    /// models, a quick-start file of that name, whose `load_col` and `threshold` apply when no file sets them.
    /// recbench does not apply them: which columns a run reads is what its own config says (and RecBole skips
    /// absent columns and files where recbench stops), so the note names what RecBole would read.
    static func datasetDefaultsNote(_ model: any Recommender.Type, config: Config) -> String? {
        guard config["dataset"] == .string("ml-100k"), !config.isSet("load_col") else { return nil }
        var read = ["properties/dataset/ml-100k.yaml's load_col {inter: [user_id, item_id, rating, timestamp]}"]
        if model.family == .contextAware {
            read.append("quick_start_config/context-aware_ml-100k.yaml's user columns age, gender, occupation, item columns "
                        + "release_year, class and threshold {rating: 4} (ratings below 4 as labelled negatives)")
        } else if model.name == "GRU4RecF" {
            read.append("quick_start_config/special_sequential_on_ml-100k.yaml's item columns release_year, class")
        }
        return "dataset ml-100k: for a dataset of this name RecBole 1.2.1 also reads " + read.joined(separator: " and ")
            + "; recbench reads the columns load_col names (here RecBole's default, \(config["load_col"])): set load_col "
            + "to compare with a RecBole run"
    }
}
