/// The compiler-checked list of models. Adding a model: one file and one line here
/// (`Configs/models/<Model>.yml` is generated from its declaration: `recbench models --defaults`).
public enum ModelRegistry {
    /// Every registered model, in listing order.
    public static let models: [any Recommender.Type] = [
        Pop.self,
        RepeatPop.self,
        ItemKNN.self,
        EASE.self,
        SLIMElastic.self,
        BPR.self,
        MultiDAE.self,
        MultiVAE.self,
        RecVAE.self,
        MacridVAE.self,
        Item2vec.self,
        NeuMF.self,
        LightGCN.self,
        ALS.self,
        FM.self,
        FFM.self,
        DeepFM.self,
    ]

    /// The model called `name` (case-insensitive); unknown names throw with a suggestion.
    public static func model(named name: String) throws -> any Recommender.Type {
        if let m = models.first(where: { $0.name.lowercased() == name.lowercased() }) { return m }
        let names = models.map { $0.name }
        throw RecBenchError(field: name, "unknown model\(Suggestion.hint(for: name, in: names)) (models: \(names.joined(separator: ", ")))")
    }

    /// Every model's hyperparameter names with their defaults (all accepted in any config,
    /// so one config can drive a sweep over several models).
    public static var parameterDefaults: [String: ConfigValue] {
        var all: [String: ConfigValue] = [:]
        for m in models { for p in m.parameters { all[p.name] = p.defaultValue } }
        return all
    }

    /// The model called `name` with these resolved hyperparameters (a stored run's), unfitted.
    public static func model(named name: String, hyperparameters: [String: ConfigValue]) throws -> any Recommender {
        let type = try model(named: name)
        let config = try Config(layers: [ConfigLayer(source: "record", values: hyperparameters)], modelKeys: parameterDefaults)
        return try type.init(parameters: ModelParameters(config: config, declared: type.parameters))
    }

    /// The text of `Configs/models/<Model>.yml`: the model's declared hyperparameters with
    /// their defaults, generated from the declaration (the one source of those values).
    public static func defaultsFile(for model: any Recommender.Type) -> String {
        var lines = ["# \(model.name) hyperparameters and their defaults (RecBole 1.2.1's where RecBole has the key).",
                     "# Generated from the model's declaration by `recbench models --defaults --write Configs/models`:",
                     "# change the declaration, then regenerate. Values set here override the declaration."]
        if model.parameters.isEmpty { lines.append("# \(model.name) has no hyperparameters.") }
        for p in model.parameters { lines.append("\(p.name): \(p.defaultValue)    # \(p.summary)") }
        return lines.joined(separator: "\n") + "\n"
    }
}
