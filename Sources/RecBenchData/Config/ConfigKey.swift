import Linalg
import RecBenchSupport

/// One documented config key: its name, the type users write, the default, and its meaning.
public struct ConfigKey: Sendable {
    /// How recbench treats the key.
    public enum Role: Sendable, Equatable {
        /// Read and used, with RecBole's meaning.
        case used
        /// A RecBole key for infrastructure recbench has no use for (GPUs, caches): accepted
        /// with a one-line notice so RecBole configs run unchanged.
        case ignored
        /// A deprecated RecBole alias, read as the current key `to` (one notice line).
        case mapped(to: String)
        /// A RecBole key that would change the data or protocol and that recbench does not
        /// implement: an error naming the reason and `closest` supported key. Set to its
        /// RecBole default (`defaultValue`, usually null) or to one of the key's `inertValues`
        /// (values that change nothing any recbench model reads) it is ignored.
        case refused(closest: String?)
    }
    /// The key as written in YAML.
    public let name: String
    /// The type as shown to users ("str", "int", "list of int", ...).
    public let type: String
    /// The built-in default.
    public let defaultValue: ConfigValue
    /// One sentence: what the key means.
    public let summary: String
    /// Whether the key is used or only accepted.
    public let role: Role
    /// How a search draws it when the user gives no space (model hyperparameters; nil: not searched).
    public var search: SearchDistribution? = nil
    /// A refused key's values besides its default that change nothing and are ignored. (Kept here, not in the
    /// `refused` case: an array inside a multi-payload enum is stored with tag bits, which LeakSanitizer reads as a leak.)
    public var inertValues: [ConfigValue] = []

    /// Declares a key.
    public init(_ name: String, _ type: String, _ defaultValue: ConfigValue, _ summary: String, role: Role = .used) {
        self.name = name
        self.type = type
        self.defaultValue = defaultValue
        self.summary = summary
        self.role = role
    }

    /// The key, searched by default over `distribution`.
    public func searched(_ distribution: SearchDistribution) -> ConfigKey {
        var key = self
        key.search = distribution
        return key
    }
}

/// Every global (non-model) config key recbench knows. Model hyperparameters are declared
/// next to each model (`Recommender.parameters`).
public enum ConfigKeys {
    /// Keys that do not change a run's metrics, so no part of its identity (`data_path`: the
    /// data's fingerprint stands for it, so the same files under another spelling resume;
    /// `LIST_SUFFIX` only decides whether files are refused). Not `metric_decimal_place`: early
    /// stopping compares validation values at those places, so it shapes a learned model's fit.
    public static let presentation: Set<String> = ["results_dir", "threads", "thread_split", "checkpoint_dir",
                                                   "memory_limit_mb", "eval_memory_mb", "data_path", "LIST_SUFFIX",
                                                   "resume_interval"]
    /// The keys recbench reads: the data, the protocol, and the run.
    public static let global: [ConfigKey] = [
        // Dataset and atomic files
        ConfigKey("dataset", "str", .null, "Dataset name: files are `{data_path}/{dataset}/{dataset}.inter` (or `{data_path}/{dataset}.inter`)."),
        ConfigKey("data_path", "str", .string("dataset/"), "Folder that holds the dataset folder; relative paths are relative to the working directory."),
        ConfigKey("benchmark_filename", "list of str", .null,
                  "Load a pre-split dataset from `{dataset}.{name}.inter` files, in order train, valid, test; no filtering or splitting is done."),
        ConfigKey("field_separator", "str", .string("\t"), "Separator between columns in atomic files."),
        ConfigKey("seq_separator", "str", .string(" "), "Separator inside `token_seq` / `float_seq` values."),
        ConfigKey("USER_ID_FIELD", "str", .string("user_id"), "Column that holds the user token."),
        ConfigKey("ITEM_ID_FIELD", "str", .string("item_id"), "Column that holds the item token."),
        ConfigKey("RATING_FIELD", "str or null", .string("rating"), "Column that holds the rating (kept as a feature; every loaded row is a positive)."),
        ConfigKey("LABEL_FIELD", "str", .string("label"), "Column that holds a row's label (float; 1 is a positive) in labelled data."),
        ConfigKey("threshold", "map of one column → number, or null", .null,
                  "Labels each row 1 where the column (`RATING_FIELD` or `LABEL_FIELD`) is ≥ the number, else 0, as RecBole does "
                  + "(e.g. `{rating: 4}`); read by `eval_args.mode: labeled` and by context-aware models trained without drawn negatives."),
        ConfigKey("TIME_FIELD", "str or null", .string("timestamp"), "Column that holds the interaction time, used by `order: TO` and `rm_dup_inter`."),
        ConfigKey("load_col", "map of suffix → list of str, or null", .map(["inter": .list([.string("user_id"), .string("item_id")])]),
                  "Columns to load per file (`inter`, `item`, `user`); a file whose suffix is absent is not loaded; "
                  + "null loads every column of every file present."),
        ConfigKey("unused_col", "map of suffix → list of str", .null,
                  "Columns loaded, checked and used by the split (e.g. the time column for `order: TO`), but not model inputs, "
                  + "as in RecBole (which drops them after splitting)."),
        ConfigKey("numerical_features", "list of str", .list([]),
                  "Float (or float_seq) columns of the `.user` / `.item` files that context-aware models read, each as its value times "
                  + "a learned vector; other float columns are no model input, as in RecBole."),
        ConfigKey("rm_dup_inter", "null, first or last", .null, "Keep duplicate (user, item) rows (null), or only the first / last by time."),
        ConfigKey("user_inter_num_interval", "interval str or null", .null,
                  "Keep users whose interaction count lies in the interval, e.g. `[5,inf)`; with the item interval, repeated until stable (k-core). "
                  + "A bare number is an error (RecBole 1.2.1 ignores it)."),
        ConfigKey("item_inter_num_interval", "interval str or null", .null, "Keep items whose interaction count lies in the interval, e.g. `[5,inf)`. "
                  + "A side-file row without interactions stays unless 0 is below the lower value, open or closed (RecBole's rule: `(0,inf)` keeps it)."),
        ConfigKey("filter_inter_by_user_or_item", "bool", .bool(true), "Drop interactions whose user / item is missing from a loaded `.user` / `.item` file."),
        // Protocol
        ConfigKey("eval_args", "map", .map([
            "split": .map(["RS": .list([.double(0.8), .double(0.1), .double(0.1)])]),
            "order": .string("RO"), "group_by": .string("user"), "mode": .string("full"),
        ]), "Split and ranking protocol: `split` ({RS: [train, valid, test]}, {LS: valid_and_test | test_only} or {TS: [train, valid, "
            + "test]}: test after one time for all users), `order` (TO by time, RO random), `group_by` (user, or none: RS over the whole log), "
            + "`mode` (full: every item; uniN / popN: RecBole's sampled ranking, each positive among N items drawn uniformly / by "
            + "popularity that the user has not had (a next-item row: any but its own), the draws fixed per split by the seed; "
            + "labeled: each row of a labelled split scored on its own for AUC, LogLoss, MAE, RMSE (context-aware models; "
            + "`threshold` makes the labels); or per split, {valid: full, test: uni100}, a split left out taking the other's). "
            + "As in RecBole, a file's eval_args replaces an earlier file's whole and "
            + "its missing entries take these defaults; a sequential model whose config sets no eval_args gets RecBole's "
            + "{split: {LS: valid_and_test}, order: TO}; "
            + "`--set eval_args.KEY=V` changes one entry."),
        ConfigKey("history_mask", "recbole, seen or none", .string("recbole"),
                  "Which earlier-split items are excluded from ranking: RecBole's (history minus the split's positives), every seen item, or none."),
        ConfigKey("eval_protocol", "auto, user or next-item", .string("auto"),
                  "What an evaluation row is: a user (all the user's items of the split are positives; `history_mask` applies) or a "
                  + "next-item example (RecBole's sequential evaluation: the items before it predict it; nothing is masked unless "
                  + "`history_mask: seen`). auto: next-item for sequential models, user for the others."),
        ConfigKey("MAX_ITEM_LIST_LENGTH", "int", .int(50), "Sequential models read at most this many latest items of a sequence."),
        ConfigKey("LIST_SUFFIX", "str", .string("_list"),
                  "Suffix of RecBole's pre-expanded sequential example columns (`item_id_list`): a `benchmark_filename` file with "
                  + "`{ITEM_ID_FIELD}{LIST_SUFFIX}` is refused for sequential runs, since recbench builds the examples from the log."),
        ConfigKey("metrics", "list of str", .list(["Recall", "MRR", "NDCG", "Hit", "Precision"].map { .string($0) }),
                  "Metrics to report, in this order (the known names are listed by `recbench run --help`); under "
                  + "`eval_args.mode: labeled` RecBole's value metrics AUC, LogLoss, MAE and RMSE (by default AUC and LogLoss)."),
        ConfigKey("topk", "int or list of int", .list([.int(10)]), "Cutoffs K for every @K metric."),
        ConfigKey("valid_metric", "str", .string("MRR@10"),
                  "Validation metric that drives early stopping and model selection, e.g. `MRR@10` (`GAUC` has no cutoff)."),
        ConfigKey("valid_metric_bigger", "bool", .bool(true),
                  "Whether a larger validation metric is better: set from `valid_metric` as RecBole does (AveragePopularity and GiniIndex "
                  + "smaller); a value that contradicts it is an error."),
        ConfigKey("tail_ratio", "float", .double(0.1),
                  "TailPercentage: ≤ 1, the least popular share of train items counts as tail; > 1, items with at most this many train interactions."),
        ConfigKey("metric_decimal_place", "int", .int(4), 
                  "Decimal places in printed tables (stored results keep full precision) and in early stopping's comparison, "
                    + "as RecBole's evaluator rounds."),
        ConfigKey("eval_batch_size", "int", .int(4096), "Users scored per batch during evaluation, at most (see eval_memory_mb)."),
        ConfigKey("eval_memory_mb", "int", .int(1024),
                  "Memory for one batch of scores during evaluation, in MiB: a batch holds min(eval_batch_size, this ÷ (4 B × items)) users, "
                  + "so evaluation memory stays bounded on any catalogue; results do not depend on it."),
        // Training (learned models)
        ConfigKey("epochs", "int", .int(300), "Maximum training epochs (learned models)."),
        ConfigKey("train_batch_size", "int", .int(2048), "Training batch size (learned models)."),
        ConfigKey("learner", "str", .string("adam"), "Optimiser for learned models: adam or sgd."),
        ConfigKey("learning_rate", "float", .double(0.001), "Learning rate (learned models)."),
        ConfigKey("weight_decay", "float", .double(0), "L2 weight decay (learned models)."),
        ConfigKey("eval_step", "int", .int(1), "Validate every this many epochs (learned models)."),
        ConfigKey("stopping_step", "int", .int(10),
                  "Stop when more than this many validations in a row bring no improvement, values compared at `metric_decimal_place` "
                    + "places (RecBole's rule; learned models)."),
        ConfigKey("train_neg_sample_args", "map or null", .map(["distribution": .string("uniform"), "sample_num": .int(1)]),
                  "Negative sampling: `{distribution: uniform, sample_num: N}`, or `popularity` (RecBole's: item i drawn with "
                  + "probability ∝ count(i)^`alpha`, `alpha` 1 by default, counted as `negative_popularity` says), always among items the "
                  + "user has not had in train (a sequential BPR loss: any item but the example's own, as RecBole's repeatable "
                  + "sampler; `dynamic: false`, `candidate_num` accepted at RecBole's defaults); null: none. Pairwise losses (BPR, "
                  + "LINE, the graph models, FPMC, TransRec, a sequential `loss_type: BPR`) fit `train_batch_size` / N pairs in a "
                  + "batch, each seen N times with its own draw, as RecBole's pairwise loader repeats them (null: one negative, with "
                  + "a note; RecBole stops there); pointwise ones (NeuMF, DMF, NAIS, NNCF, the context-aware family) fit "
                  + "`train_batch_size` / (1 + N) positives, each with N negatives. Sequential models trained with CE draw none "
                  + "(a note says so; RecBole 1.2.1 refuses the pair)."),
        ConfigKey("negative_popularity", "recbole or train", .string("recbole"),
                  "Which interactions count towards popularity-drawn negatives (`train_neg_sample_args.distribution: popularity`): "
                  + "recbole (every interaction of train, valid and test, as RecBole 1.2.1's samplers count them: the valid and test "
                  + "labels shape training's negatives) or train (the train split's only). The same counts weigh `eval_args.mode: popN`'s "
                  + "candidates (RecBole's count all splits there too)."),
        ConfigKey("clip_grad_norm", "map or null", .null,
                  "Gradient clipping for learned models as torch's `clip_grad_norm_`, e.g. `{max_norm: 5}` (`norm_type` 2 by default, or inf)."),
        ConfigKey("checkpoint_dir", "str or null", .null, "Folder where learned models also write their best parameters (null: in memory only)."),
        ConfigKey("init_parameters", "str or null", .null,
                  "A recbench checkpoint (a `checkpoint_dir` `.params` file) a learned model starts from instead of its own initialisation: "
                  + "every parameter the model declares, with its shape (the file's bytes are part of the run key)."),
        // Run
        ConfigKey("model", "str", .null, "Model to run when `--model` is not given."),
        ConfigKey("seed", "int", .int(2020), "Seed for every random choice (split order RO, sampling, initialisation)."),
        ConfigKey("reproducibility", "bool", .bool(true),
                  "Accepted silently, any value: recbench is always deterministic (same seed, data and config, same metrics)."),
        ConfigKey("threads", "int", .int(0),
                  "Threads for BLAS and for parallel loops (0 = all cores); same value, same results "
                  + "(learned models may differ in the last bits between values)."),
        ConfigKey("thread_split", "str", .string("auto"),
                  "How threads are shared between OpenBLAS and recbench's workers per phase: auto (the split `recbench bench --thread-splits` measured "
                  + "fastest per phase: on 2-core hosts the workers throughout), workers (one OpenBLAS thread per call, large products split over "
                  + "recbench's workers), or blas (OpenBLAS on every thread). Like `threads`, it may change learned models' last bits."),
        ConfigKey("results_dir", "str", .string("results"), "Folder that receives one JSON result file per run."),
        ConfigKey("resume_interval", "float", .int(300),
                  "Seconds between saves of a learned model's training state (parameters, optimizer moments, early stopping), "
                  + "after the epoch that ends them, beside the run's result as `<model>-<key>.training`: a run killed while training and "
                  + "started again with the same config and data (`run` or a sweep) continues after the last saved epoch with the "
                  + "metrics of an uninterrupted run, and the file goes once the result is stored. 0: never saved or taken up "
                  + "(`run --no-save` neither)."),
        ConfigKey("memory_limit_mb", "int", .int(0),
                  "Memory a run may plan to use, in MiB (0 = this machine's: its physical memory or cgroup limit); "
                  + "a run estimated to need more is refused before allocating."),
    ]

    /// Every key a config may name: recbench's own, then RecBole's that it ignores, maps or refuses.
    public static let all: [ConfigKey] = global + RecBoleKeys.catalogue

    /// Lookup by name.
    public static let byName: [String: ConfigKey] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })
}
