import Foundation
import Testing
import RecBenchCore
import RecBenchBench

/// Model defaults have one source, the Swift declaration: the shipped YAML files are
/// generated from it, and the benchmark's FLOP counts come from the models.
struct ModelDefaultsTests {
    @Test func shippedDefaultsFilesAreTheGeneratedOnes() throws {
        let folder = Fixtures.repoRoot + "/Configs/models"
        for model in ModelRegistry.models {
            let path = "\(folder)/\(model.name).yml"
            let shipped = try String(contentsOfFile: path, encoding: .utf8)
            #expect(shipped == ModelRegistry.defaultsFile(for: model),
                    "\(path) differs from the declaration: run `recbench models --defaults --write Configs/models`")
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".yml") }
        #expect(Set(files) == Set(ModelRegistry.models.map { "\($0.name).yml" }), "a defaults file without a registered model")
    }

    @Test func aDefaultsFileReadsBackAsTheDeclaredDefaults() throws {
        for model in ModelRegistry.models {
            let parsed = try ConfigValue.parse(yaml: ModelRegistry.defaultsFile(for: model))
            let values: [String: ConfigValue]
            switch parsed {
            case .map(let m): values = m
            case .null: values = [:]
            default: Issue.record("\(model.name): not a map"); continue
            }
            #expect(values.count == model.parameters.count, "\(model.name)")
            for p in model.parameters { #expect(values[p.name] == p.defaultValue, "\(model.name).\(p.name)") }
        }
    }

    @Test func autoEncoderCostCountsEveryDenseLayer() throws {
        // MultiDAE with one hidden layer h: encoder n→h→l, decoder l→h→n. Per user, dense
        // layers h·l + l·h + h·n (the first layer n·h is counted apart).
        let shape = WorkShape(users: 10, items: 100, trainInteractions: 50, trainPairs: 40, batchSize: 4096, negatives: 1)
        let model = try ModelRegistry.model(named: "MultiDAE", hyperparameters: ["mlp_hidden_size": .list([.int(20)]), "latent_dimension": .int(8)])
        let cost = try #require(model.cost(shape))
        let users: Double = 10, items: Double = 100, pairs: Double = 40, hidden: Double = 20, latent: Double = 8
        let perUser: Double = hidden * latent + latent * hidden + hidden * items
        let dense: Double = 2 * users * perUser
        let first: Double = 2 * users * items * hidden, firstSparse: Double = 2 * pairs * hidden
        #expect(cost.nominal == 4 * dense + 3 * first)
        #expect(cost.executed == 4 * dense + 3 * firstSparse)
        #expect(try ModelRegistry.model(named: "EASE", hyperparameters: [:]).cost(shape) == nil)
    }

    /// A pairwise loss (and a sequential BPR `loss_type`) trains every pair once per negative,
    /// a pointwise one every positive with its negatives, so an epoch's FLOPs grow linearly
    /// with `sample_num`; CE draws none.
    @Test func costsCountEveryNegative() throws {
        func shape(_ negatives: Int) -> WorkShape {
            WorkShape(users: 100, items: 500, trainInteractions: 8192 * 3, trainPairs: 8192 * 3, batchSize: 4096, negatives: negatives)
        }
        var checked = 0
        for type in ModelRegistry.models {
            let base = try ModelRegistry.model(named: type.name, hyperparameters: [:])
            var variants: [(model: any Recommender, drawsNegatives: Bool)] = base is any PairwiseModel || base is any PointwiseModel ? [(base, true)] : []
            if let sequential = base as? any NextItemLossModel {
                variants = sequential.lossType == .bpr ? [(base, true)]
                    : [(base, false), (try ModelRegistry.model(named: type.name, hyperparameters: ["loss_type": .string("BPR")]), true)]
            }
            for (model, drawsNegatives) in variants {
                guard let c1 = model.cost(shape(1))?.executed else { continue }
                let (c2, c4) = (model.cost(shape(2))!.executed, model.cost(shape(4))!.executed)
                if drawsNegatives {
                    #expect(c2 > c1, "\(type.name)")
                    #expect(abs((c4 - c2) - 2 * (c2 - c1)) <= 1e-9 * c4, "\(type.name): \(c1) \(c2) \(c4)")
                } else {
                    #expect(c2 == c1 && c4 == c1, "\(type.name) CE")
                }
                checked += 1
            }
        }
        #expect(checked >= 40)
    }

    @Test func theShippedBenchmarkReferenceNamesRegisteredModelsWithATarget() throws {
        let reference = try BenchmarkReference(path: Fixtures.repoRoot + "/Configs/bench/recbole-1.2.1.yml")
        #expect(reference.sgemmPeak > 1e10)
        #expect(reference.modelNames.count >= 10)
        for name in reference.modelNames {
            #expect((try? ModelRegistry.model(named: name)) != nil, "the bench reference names \(name), which is not registered")
            let m = try reference.model(name)
            // A wall with a target against it, or (sequential models) a target against RecBole run here.
            #expect((m.wall > 0 && (m.speedup != nil || m.wallTarget != nil)) || ((m.wall > 0 || m.wall.isNaN) && m.sameRunSpeedup != nil),
                    "\(name) has no wall or no target")
        }
        #expect(throws: RecBenchError.self) { try reference.model("NoSuchModel") }
    }
}

/// A model declares everything about itself once, in its own file; what several models share
/// is declared once for all of them.
struct ModelDeclarationTests {
    @Test func aKeyDeclaredByTwoModelsMeansTheSameInBoth() {
        var first: [String: (model: String, key: ConfigKey)] = [:]
        for model in ModelRegistry.models {
            for key in model.parameters {
                if let (other, seen) = first[key.name] {
                    #expect(seen.type == key.type && seen.summary == key.summary,
                            "\(model.name) and \(other) both declare '\(key.name)' but differently: declare it once in SharedKeys")
                } else {
                    first[key.name] = (model.name, key)
                }
            }
        }
    }

    @Test func namesAndRandomStreamsAreUnique() {
        let names = ModelRegistry.models.map { $0.name.lowercased() }
        #expect(Set(names).count == names.count)
        let streams = ModelRegistry.models.compactMap { ($0 as? any LearnedModel.Type)?.randomStreams.initialization }
        #expect(Set(streams).count == streams.count && streams.count >= 10)
    }

    @Test func testSettingsNameDeclaredParametersAndBuild() throws {
        for model in ModelRegistry.models {
            #expect(!model.testSettings.isEmpty, "\(model.name)")
            for settings in model.testSettings {
                for key in settings.keys { #expect(model.parameters.contains { $0.name == key }, "\(model.name): test setting \(key) is not declared") }
                #expect(throws: Never.self) { _ = try ModelRegistry.model(named: model.name, hyperparameters: settings) }
            }
        }
    }

    @Test func theModelTableListsEveryModelWithItsParameters() {
        let table = ModelRegistry.markdownTable().split(separator: "\n").map(String.init)
        #expect(table.count == ModelRegistry.models.count + 2)
        for model in ModelRegistry.models {
            let row = table.first { $0.contains("| \(model.name) |") }
            #expect(row != nil, "\(model.name) has no row")
            for p in model.parameters { #expect(row?.contains("`\(p.name)` \(p.defaultValue)") == true, "\(model.name).\(p.name)") }
        }
        #expect(table.first { $0.contains("| RepeatPop |") }?.contains("repeat baseline") == true)
    }
}
