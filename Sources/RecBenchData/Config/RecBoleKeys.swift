import RecBenchSupport
/// RecBole 1.2.1's keys that recbench does not read with their RecBole meaning: each is
/// ignored (infrastructure), mapped (a deprecated alias of a current key) or refused (it
/// would change the data or the protocol). Together with `ConfigKeys.global` this covers
/// every key of RecBole 1.2.1's `properties/overall.yaml` and `properties/dataset/sample.yaml`
/// and the aliases older RecBole versions documented, so a RecBole config never meets
/// "unknown key" and never changes results without a word.
public enum RecBoleKeys {
    static func ignored(_ name: String, _ summary: String) -> ConfigKey {
        ConfigKey(name, "–", .null, summary, role: .ignored)
    }
    static func refused(_ name: String, _ summary: String, closest: String? = nil, inert: ConfigValue = .null,
                        alsoInert: [ConfigValue] = []) -> ConfigKey {
        var key = ConfigKey(name, "–", inert, summary, role: .refused(closest: closest))
        key.inertValues = alsoInert
        return key
    }

    /// The catalogue, in RecBole's file order.
    public static let catalogue: [ConfigKey] = environment + training + dataset + deprecated

    static let environment: [ConfigKey] = [
        ignored("gpu_id", "GPU selection; recbench runs on the CPU."),
        ignored("worker", "Data-loader processes; recbench's parallelism is `threads`."),
        ignored("use_gpu", "GPU switch; recbench runs on the CPU."),
        ignored("state", "Log level; use `--verbose` / `--quiet`."),
        ignored("show_progress", "Progress bars; recbench shows them on a terminal only."),
        ignored("save_dataset", "Dataset cache; recbench reads atomic files directly (fast enough not to cache)."),
        ignored("dataset_save_path", "Dataset cache path."),
        ignored("save_dataloaders", "Data-loader cache."),
        ignored("dataloaders_save_path", "Data-loader cache path."),
        ignored("log_wandb", "Weights & Biases logging; recbench writes one JSON record per run."),
        ignored("wandb_project", "Weights & Biases project."),
        refused("shuffle", "training in the files' order is not supported: recbench shuffles the training data before each epoch "
                + "(seeded), as RecBole's default `shuffle: True` does", inert: .bool(true)),
        ignored("nproc", "Distributed-training processes; use `threads` or `sweep --jobs`."),
        ignored("world_size", "Distributed training."),
        ignored("offset", "Distributed training."),
        ignored("ip", "Distributed training."),
        ignored("port", "Distributed training."),
        ignored("local_rank", "Distributed training."),
        ignored("config_files", "Config file list; use `--config`."),
    ]

    static let training: [ConfigKey] = [
        ignored("loss_decimal_place", "Decimal places of the logged loss."),
        ignored("enable_amp", "Mixed precision: RecBole autocasts training to float16 on a GPU and bfloat16 on a CPU; recbench trains in float32."),
        ignored("enable_scaler", "Gradient scaling for float16 training, which RecBole applies only on a GPU."),
        refused("transform", "only RecBole's built-in transforms are accepted (`user_defined` runs the config's own Python): "
                + "mask_itemseq and inverse_itemseq are built into BERT4Rec and SHAN, and crop_itemseq and reorder_itemseq add "
                + "batch fields only contrastive models read, none of them in recbench",
                alsoInert: ["mask_itemseq", "inverse_itemseq", "crop_itemseq", "reorder_itemseq"].map(ConfigValue.string)),
        ignored("repeatable", "RecBole's repeat-item switch: its sequential models need True (their quick-start default; 1.2.1 refuses False), "
                + "which is recbench's sequential protocol always; what is masked is `history_mask`."),
        refused("eval_neg_sample_args", "RecBole 1.0's sampled evaluation (1.2.1 ignores it): write eval_args: {mode: uni100} (or popN, "
                + "or {valid: full, test: uni100})", closest: "eval_args"),
        refused("valid_neg_sample_args", "RecBole 1.2.1 derives it from eval_args.mode and overwrites what the config sets: write "
                + "eval_args: {mode: {valid: uni100, test: full}}", closest: "eval_args"),
        refused("test_neg_sample_args", "RecBole 1.2.1 derives it from eval_args.mode and overwrites what the config sets: write "
                + "eval_args: {mode: {valid: full, test: uni100}}", closest: "eval_args"),
    ]

    static let dataset: [ConfigKey] = [
        refused("seq_len", "per-field sequence length caps are not supported"),
        ignored("NEG_PREFIX", "Internal name prefix of sampled negatives."),
        ignored("ITEM_LIST_LENGTH_FIELD", "Column name of RecBole's augmented examples; recbench stores no such column."),
        ignored("POSITION_FIELD", "Column name of RecBole's position ids; recbench stores no such column."),
        ignored("HEAD_ENTITY_ID_FIELD", "Knowledge-graph models only (recbench reads no .kg / .link files)."),
        ignored("TAIL_ENTITY_ID_FIELD", "Knowledge-graph models only."),
        ignored("RELATION_ID_FIELD", "Knowledge-graph models only."),
        ignored("ENTITY_ID_FIELD", "Knowledge-graph models only."),
        ignored("kg_reverse_r", "Knowledge-graph models only."),
        ignored("entity_kg_num_interval", "Knowledge-graph models only."),
        ignored("relation_kg_num_interval", "Knowledge-graph models only."),
        refused("unload_col", "column exclusion lists are not supported", closest: "load_col"),
        refused("additional_feat_suffix", "additional feature files are not supported"),
        refused("alias_of_user_id", "token aliases (shared id spaces) are not supported"),
        refused("alias_of_item_id", "token aliases (shared id spaces) are not supported"),
        refused("alias_of_entity_id", "token aliases (shared id spaces) are not supported"),
        refused("alias_of_relation_id", "token aliases (shared id spaces) are not supported"),
        refused("preload_weight", "preloaded embeddings are not supported"),
        refused("normalize_field", "min-max normalisation of float features is not implemented; "
                                   + "`numerical_features` are read as the file holds them, so normalise the column in the file"),
        refused("normalize_all", "min-max normalisation of float features is not implemented; "
                                 + "`numerical_features` are read as the file holds them, so normalise the column in the file",
                inert: .bool(false)),
        refused("discretization", "bucketing float features is not implemented; bucket the column into a token column in the file",
                closest: "numerical_features"),
        refused("val_interval", "filtering by field value is not supported; filter the atomic files beforehand",
                closest: "user_inter_num_interval"),
    ]

    /// Keys of RecBole 0.2 / 1.0 that later versions renamed. RecBole 1.2.1 ignores all of
    /// them (warning only for the negative-sampling ones), so a config that still uses them
    /// did not get what it asked for there either: recbench maps the one family whose new
    /// form is unambiguous and refuses the rest with the replacement.
    static let deprecated: [ConfigKey] = [
        ConfigKey("neg_sampling", "map or null", .null,
                  "RecBole 1.0's name for `train_neg_sample_args`: `{uniform: N}` is read as `{distribution: uniform, sample_num: N}`, "
                  + "null as null (no negatives).",
                  role: .mapped(to: "train_neg_sample_args")),
        ConfigKey("training_neg_sample_num", "int", .null,
                  "RecBole 0.2's name for `train_neg_sample_args.sample_num` (0: no negatives).",
                  role: .mapped(to: "train_neg_sample_args")),
        ConfigKey("training_neg_sample_distribution", "str", .null,
                  "RecBole 0.2's name for `train_neg_sample_args.distribution`.",
                  role: .mapped(to: "train_neg_sample_args")),
        refused("eval_setting", "RecBole 0.2's protocol string (RecBole ≥ 1.0 ignores it, silently)", closest: "eval_args"),
        refused("split_ratio", "RecBole 0.2's split (RecBole ≥ 1.0 ignores it, silently); write eval_args: {split: {RS: [...]}}",
                closest: "eval_args"),
        refused("leave_one_num", "RecBole 0.2's leave-one-out split (RecBole ≥ 1.0 ignores it, silently); write eval_args: {split: {LS: valid_and_test}}",
                closest: "eval_args"),
        refused("group_by_user", "RecBole 0.2's grouping switch (RecBole ≥ 1.0 ignores it, silently); write eval_args: {group_by: user}",
                closest: "eval_args"),
        refused("min_user_inter_num", "RecBole 0.2's filter (RecBole ≥ 1.0 ignores it, silently); write user_inter_num_interval: \"[N,inf)\"",
                closest: "user_inter_num_interval"),
        refused("max_user_inter_num", "RecBole 0.2's filter (RecBole ≥ 1.0 ignores it, silently); write user_inter_num_interval: \"[0,N]\"",
                closest: "user_inter_num_interval"),
        refused("min_item_inter_num", "RecBole 0.2's filter (RecBole ≥ 1.0 ignores it, silently); write item_inter_num_interval: \"[N,inf)\"",
                closest: "item_inter_num_interval"),
        refused("max_item_inter_num", "RecBole 0.2's filter (RecBole ≥ 1.0 ignores it, silently); write item_inter_num_interval: \"[0,N]\"",
                closest: "item_inter_num_interval"),
        refused("lowest_val", "RecBole 0.2's value filter; filtering by field value is not supported", closest: "user_inter_num_interval"),
        refused("highest_val", "RecBole 0.2's value filter; filtering by field value is not supported", closest: "user_inter_num_interval"),
        refused("fields_in_same_space", "RecBole 0.2's shared id spaces are not supported"),
        ignored("real_time_process", "RecBole 0.2 data-loader switch."),
        ignored("drop_filter_field", "RecBole 0.2 switch that dropped filter-only columns."),
        ignored("MODEL_TYPE", "Set by RecBole itself (appears in dumped configs)."),
        ignored("MODEL_INPUT_TYPE", "Set by RecBole itself (appears in dumped configs)."),
        ignored("eval_type", "Set by RecBole itself (appears in dumped configs)."),
        ignored("device", "Set by RecBole itself (appears in dumped configs)."),
        ignored("single_spec", "Set by RecBole itself (appears in dumped configs)."),
    ]
}
