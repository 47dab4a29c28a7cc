import RecBenchSupport
import RecBenchData
import RecBenchContract
import RecBenchModels

extension Search {
    /// Keys a search of a learned model may set besides the model's own.
    static let trainingKeys = ["learning_rate", "weight_decay", "train_batch_size", "learner", "train_neg_sample_args", "clip_grad_norm"]

    /// The model's declared space.
    static func defaultSpace(_ type: any Recommender.Type) throws -> SearchSpace {
        let dimensions = type.searchSpace
        guard !dimensions.isEmpty else {
            throw RecBenchError.config("--space", "\(type.name) declares no search space (it has no hyperparameter to tune): give one with --space")
        }
        return SearchSpace(dimensions, source: "\(type.name)'s declared space")
    }

    /// Refuses a space that names a key the model does not read, or draws values of the wrong
    /// type for an integer key, naming the space file's line.
    static func validate(_ space: SearchSpace, for plan: ExperimentPlan, request: RunRequest) throws {
        try checkNames(space, for: plan)
        try checkExtremes(space, request: request)
    }

    /// Refuses a space whose range reaches a value the model refuses (a negative `reg_weight`):
    /// each end of a range, and each choice, is planned once, so no trial fails on a bound.
    static func checkExtremes(_ space: SearchSpace, request: RunRequest) throws {
        for d in space.dimensions {
            let ends: [ConfigValue]
            switch d.distribution {
            case .choice(let values): ends = values
            case .uniform(let low, let high), .quniform(let low, let high, _), .loguniform(let low, let high):
                ends = [low, high].map { SearchCoordinate.value(of: d.distribution, at: $0) }
            }
            for value in ends {
                var probe = request
                probe.layers.append(ConfigLayer(source: "search space", values: [d.name: value]))
                do { _ = try Experiment.plan(probe) } catch let refused as RecBenchError {
                    throw RecBenchError(location: d.line.map { "\(space.source):\($0)" } ?? space.source, field: d.name,
                                        "the range reaches \(value), which the run refuses: \(refused.message)")
                }
            }
        }
    }

    static func checkNames(_ space: SearchSpace, for plan: ExperimentPlan) throws {
        let type = plan.modelType, learned = type.readsTrainingKeys
        let own = Dictionary(uniqueKeysWithValues: type.parameters.map { ($0.name, $0) })
        let allowed = own.keys.sorted() + (learned ? trainingKeys : [])
        for d in space.dimensions {
            let fail = { (message: String) in RecBenchError(location: d.line.map { "\(space.source):\($0)" } ?? space.source, field: d.name, message) }
            if let key = own[d.name] {
                if case .int = key.defaultValue, !drawsIntegers(d.distribution) {
                    throw fail("\(type.name)'s \(d.name) is an integer: search it with choice or with quniform and an integral step")
                }
                continue
            }
            if trainingKeys.contains(d.name) {
                guard learned else { throw fail("\(type.name) is not trained by gradient steps: \(d.name) changes nothing") }
                continue
            }
            let setting = ConfigKeys.byName[d.name] != nil ? " (it is a data or run setting, which a search keeps fixed)" : ""
            throw fail("\(type.name) has no hyperparameter '\(d.name)'\(setting)\(Suggestion.hint(for: d.name, in: allowed)); "
                       + "it has: \(allowed.joined(separator: ", "))")
        }
    }

    static func drawsIntegers(_ distribution: SearchDistribution) -> Bool {
        switch distribution {
        case .choice(let values): return values.allSatisfy { $0.intValue != nil }
        case .quniform(_, _, let q): return q.rounded() == q
        case .uniform, .loguniform: return false
        }
    }
}
