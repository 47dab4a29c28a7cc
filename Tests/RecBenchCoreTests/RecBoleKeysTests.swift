import Testing
import RecBenchCore

/// RecBole 1.2.1 configs: every key is used, ignored, mapped or refused — never "unknown".
struct RecBoleKeysTests {
    let models = ModelRegistry.parameterNames

    func config(_ yaml: String...) throws -> Config {
        try Config(layers: yaml.enumerated().map { try ConfigLayer.yaml($0.element, source: "c\($0.offset).yml") }, modelKeys: models)
    }

    /// RecBole 1.2.1's `overall.yaml` and `dataset/sample.yaml` key lists (the keys, typed
    /// here from the 1.2.1 sources, not from recbench's catalogue).
    static let recBoleKeys = """
        gpu_id worker use_gpu seed state reproducibility data_path checkpoint_dir show_progress save_dataset
        dataset_save_path save_dataloaders dataloaders_save_path log_wandb wandb_project shuffle epochs
        train_batch_size learner learning_rate train_neg_sample_args eval_step stopping_step clip_grad_norm
        weight_decay loss_decimal_place require_pow enable_amp enable_scaler transform eval_args repeatable
        metrics topk valid_metric valid_metric_bigger eval_batch_size metric_decimal_place field_separator
        seq_separator USER_ID_FIELD ITEM_ID_FIELD RATING_FIELD TIME_FIELD seq_len LABEL_FIELD threshold NEG_PREFIX
        ITEM_LIST_LENGTH_FIELD LIST_SUFFIX MAX_ITEM_LIST_LENGTH POSITION_FIELD HEAD_ENTITY_ID_FIELD
        TAIL_ENTITY_ID_FIELD RELATION_ID_FIELD ENTITY_ID_FIELD kg_reverse_r entity_kg_num_interval
        relation_kg_num_interval load_col unload_col unused_col additional_feat_suffix numerical_features
        alias_of_user_id alias_of_item_id alias_of_entity_id alias_of_relation_id preload_weight normalize_field
        normalize_all discretization rm_dup_inter val_interval filter_inter_by_user_or_item
        user_inter_num_interval item_inter_num_interval benchmark_filename neg_sampling training_neg_sample_num
        eval_setting split_ratio leave_one_num group_by_user min_user_inter_num max_user_inter_num
        """.split(whereSeparator: \.isWhitespace).map(String.init)

    @Test func everyRecBoleKeyHasARole() {
        for key in Self.recBoleKeys {
            // A key RecBole's overall.yaml holds but one model reads (require_pow: LightGCN) is that model's parameter.
            #expect(ConfigKeys.byName[key] != nil || models.contains(key), "RecBole key \(key) is not catalogued")
        }
        let names = ConfigKeys.all.map(\.name)
        #expect(Set(names).count == names.count, "a key is catalogued twice")
    }

    @Test func refusedKeysNameTheClosestKeyButTheirNullDefaultIsIgnored() throws {
        let e = #expect(throws: RecBenchError.self) { try config("seed: 1\nsplit_ratio: [0.8, 0.1, 0.1]\n") }
        #expect(e?.location == "c0.yml:2" && e?.field == "split_ratio")
        #expect(e?.message.contains("'eval_args'") == true)
        let c = try config("unload_col: ~\nval_interval: ~\n")
        #expect(c.notices == ["c0.yml: RecBole keys recbench does not use, ignored: unload_col, val_interval"])
    }

    /// RecBole reads `shuffle: False` as training in the file's order each epoch; recbench always
    /// shuffles, so only RecBole's default is accepted.
    @Test func shuffleFalseIsRefusedAndTrueIsRecBolesDefault() throws {
        #expect(try config("shuffle: True\n").notices == ["c0.yml: RecBole keys recbench does not use, ignored: shuffle"])
        let e = #expect(throws: RecBenchError.self) { try config("seed: 1\nshuffle: False\n") }
        #expect(e?.location == "c0.yml:2" && e?.field == "shuffle")
    }

    /// BERT4Rec's and SHAN's own transforms (and the two that feed contrastive models) change
    /// nothing recbench reads; a transform that runs the user's code is refused.
    @Test func builtInTransformsAreIgnoredAndUserDefinedIsRefused() throws {
        for name in ["mask_itemseq", "inverse_itemseq", "crop_itemseq", "reorder_itemseq"] {
            #expect(try config("transform: \(name)\n").notices == ["c0.yml: RecBole keys recbench does not use, ignored: transform"])
        }
        let e = #expect(throws: RecBenchError.self) { try config("transform: user_defined\n") }
        #expect(e?.field == "transform" && e?.message.contains("user_defined") == true)
    }

    @Test func negSamplingIsReadAsTrainNegSampleArgsWithOneNotice() throws {
        let c = try config("gpu_id: 0\nneg_sampling:\n    uniform: 1\n")
        #expect(c["train_neg_sample_args"] == .map(["distribution": .string("uniform"), "sample_num": .int(1)]))
        #expect(c.origin(of: "train_neg_sample_args") == "c0.yml:2 (neg_sampling)")
        #expect(c.notices.count == 2)
        #expect(c.notices.contains { $0.contains("'neg_sampling'") && $0.contains("RecBole 1.2.1's default too") })
        #expect(try TrainingSettings(c).negativesPerPositive == 1)
        // A context-aware model's RecBole default is no negatives (quick_start_config/context-aware.yaml):
        // the same key is then no longer "RecBole's default too".
        let context = try Config(layers: [try ConfigLayer.yaml("neg_sampling: {uniform: 1}\n", source: "c.yml")], modelKeys: models,
                                 recBoleNegatives: .null)
        #expect(try TrainingSettings(context).negativesPerPositive == 1)
        #expect(context.notices.contains { $0.contains("keep its context-aware default, train_neg_sample_args: ~") })
        #expect(!context.notices.contains { $0.contains("default too") })
    }

    @Test func negSamplingNoneMeansNoNegativesAndDiffersFromRecBoleAudibly() throws {
        for none in ["~", "None"] {
            let c = try config("neg_sampling: \(none)\n")
            #expect(c["train_neg_sample_args"] == .null)
            #expect(try TrainingSettings(c).negativesPerPositive == 0)
            #expect(c.notices.first?.contains("RecBole 1.2.1 would ignore it") == true)
        }
        #expect(try TrainingSettings(config("neg_sampling: {uniform: 3}\n")).negativesPerPositive == 3)
        #expect(throws: RecBenchError.self) { try config("neg_sampling: [1]\n") }
    }

    @Test func theCurrentKeyWinsInTheSameFileAndLaterFilesStillOverride() throws {
        let same = try config("train_neg_sample_args: {distribution: uniform, sample_num: 4}\nneg_sampling: {uniform: 2}\n")
        #expect(try TrainingSettings(same).negativesPerPositive == 4)
        let later = try config("neg_sampling: {uniform: 2}\n", "train_neg_sample_args: {distribution: uniform, sample_num: 5}\n")
        #expect(try TrainingSettings(later).negativesPerPositive == 5)
        let old = try config("training_neg_sample_num: 2\n")
        #expect(try TrainingSettings(old).negativesPerPositive == 2)
    }

    @Test func trainNegSampleArgsRejectsWhatItCannotHonour() throws {
        for bad in ["{distribution: uniform, sample_num: 0}", "{distribution: popular, sample_num: 1}", "{distribution: popularity, alpha: []}",
                    "{distribution: uniform, sample_num: 1, dynamic: true, candidate_num: 2}", "{sample_nums: 2}"] {
            #expect(throws: RecBenchError.self, "\(bad)") { try TrainingSettings(config("train_neg_sample_args: \(bad)\n")) }
        }
        // RecBole 1.2.1's full default form is accepted as is.
        let full = "{distribution: uniform, sample_num: 1, alpha: 1.0, dynamic: False, candidate_num: 0}"
        #expect(try TrainingSettings(config("train_neg_sample_args: \(full)\n")).negativesPerPositive == 1)
        #expect(try TrainingSettings(config("train_neg_sample_args: {distribution: none}\n")).negativesPerPositive == 0)
        // RecBole's popularity form, as RecBole writes it.
        let recBoles = "{distribution: popularity, sample_num: 1, alpha: 1.0, dynamic: False, candidate_num: 0}"
        let popularity = try TrainingSettings(config("train_neg_sample_args: \(recBoles)\n"))
        #expect(popularity.negativeDistribution == .popularity(alpha: 1, counts: .recbole))
    }
}
