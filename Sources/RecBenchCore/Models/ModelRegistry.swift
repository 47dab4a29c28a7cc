/// The compiler-checked list of models. Adding a model: one file, one line here, one YAML
/// of defaults under `Configs/models/`.
public enum ModelRegistry {
    /// Every registered model, in listing order.
    public static let models: [any Recommender.Type] = [
        Pop.self,
        RepeatPop.self,
        ItemKNN.self,
        EASE.self,
        BPR.self,
        MultiDAE.self,
        MultiVAE.self,
        RecVAE.self,
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
}
