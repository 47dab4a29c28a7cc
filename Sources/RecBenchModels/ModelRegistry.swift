import RecBenchSupport
import RecBenchData
import RecBenchContract
/// The compiler-checked list of models, and the only one: everything else that lists models
/// (the CLI, README's model table, the shared tests, the benchmark, a sweep's baselines)
/// derives its list from `models`. Adding a model: one file and one line here, then
/// regenerate the documentation (`recbench models --defaults --write Configs/models`,
/// `recbench models --markdown` into README).
public enum ModelRegistry {
    /// Every registered model, in listing order.
    public static let models: [any Recommender.Type] = [
        Pop.self,
        RepeatPop.self,
        ItemKNN.self,
        EASE.self,
        SLIMElastic.self,
        BPR.self,
        ENMF.self,
        LINE.self,
        MultiDAE.self,
        CDAE.self,
        MultiVAE.self,
        RecVAE.self,
        MacridVAE.self,
        Item2vec.self,
        NeuMF.self,
        DMF.self,
        LightGCN.self,
        SpectralCF.self,
        NGCF.self,
        NAIS.self,
        NNCF.self,
        DGCF.self,
        GCMC.self,
        ALS.self,
        FM.self,
        FFM.self,
        DeepFM.self,
        LR.self,
        FNN.self,
        WideDeep.self,
        FwFM.self,
        PNN.self,
        AFM.self,
        NFM.self,
        DCN.self,
        DSSM.self,
        xDeepFM.self,
        AutoInt.self,
        FPMC.self,
        GRU4Rec.self,
        NARM.self,
        STAMP.self,
        SASRec.self,
        BERT4Rec.self,
        RepeatNet.self,
        HRM.self,
        NPE.self,
        FOSSIL.self,
        TransRec.self,
        SHAN.self,
        SRGNN.self,
        GCSAN.self,
        NextItNet.self,
        GRU4RecF.self,
    ]

    /// The model called `name` (case-insensitive); unknown names throw with a suggestion.
    public static func model(named name: String) throws -> any Recommender.Type {
        if let m = models.first(where: { $0.name.lowercased() == name.lowercased() }) { return m }
        let names = models.map { $0.name }
        throw RecBenchError(field: name, "unknown model\(Suggestion.hint(for: name, in: names)) (models: \(names.joined(separator: ", ")))")
    }

    /// Every model's hyperparameter names (all accepted in any config, so one config can
    /// drive a sweep over several models; each run keeps its own model's).
    public static let parameterNames: Set<String> = Set(models.flatMap { $0.parameters.map(\.name) })

    /// The model called `name` with these hyperparameters (a stored run's, or a test's; the
    /// declared defaults fill the rest), unfitted.
    public static func model(named name: String, hyperparameters: [String: ConfigValue]) throws -> any Recommender {
        let type = try model(named: name)
        let config = try Config(layers: [ConfigLayer(source: "record", values: hyperparameters)], modelKeys: parameterNames)
        return try type.init(parameters: ModelParameters(config: config, declared: type.parameters))
    }

    /// The text of `Configs/models/<Model>.yml`: the model's declared hyperparameters with
    /// their defaults, generated from the declaration as documentation (runs read the
    /// compiled-in declaration, never this file, so the working folder cannot change a result).
    public static func defaultsFile(for model: any Recommender.Type) -> String {
        var lines = ["# \(model.name) hyperparameters and their defaults (RecBole 1.2.1's where RecBole has the key).",
                     "# Generated from the model's declaration by `recbench models --defaults --write Configs/models`;",
                     "# documentation only: runs use the compiled-in defaults. Set a value in your run's config instead."]
        if model.parameters.isEmpty { lines.append("# \(model.name) has no hyperparameters.") }
        for p in model.parameters { lines.append("\(p.name): \(p.defaultValue)    # \(p.summary)") }
        let space = model.searchSpace
        lines.append("")
        if space.isEmpty {
            lines.append("# recbench tune: no declared search space (give one with --space).")
        } else {
            lines.append("# recbench tune searches, without --space (RecBole's hyper-parameter format; loguniform bounds are natural logs):")
            lines += space.map { "#   \($0.name) \($0.distribution)" }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// README's model table (`recbench models --markdown`): one row per model, grouped by
    /// family, with its hyperparameters and their defaults.
    public static func markdownTable() -> String {
        var lines = ["| family | model | type | what it does | hyperparameters (default) |", "|---|---|---|---|---|"]
        for family in ModelFamily.allCases {
            for model in models where model.family == family {
                let parameters = model.parameters.map { "`\($0.name)` \($0.defaultValue)" }.joined(separator: ", ")
                let role = model.role == .model ? "" : " (\(model.role.rawValue))"
                lines.append("| \(family.rawValue) | \(model.name) | \(model.kind.rawValue)\(role) | \(model.summary) | "
                             + "\(parameters.isEmpty ? "–" : parameters) |")
            }
        }
        return lines.joined(separator: "\n")
    }
}
