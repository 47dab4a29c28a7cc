import Foundation
import Testing
import Logging
import RecBenchCore

/// Search spaces, samplers and the pruner of `recbench tune` (no model is trained here).
struct TuningTests {
    @Test func recBolesLineFormatAndItsYAMLFormReadTheSame() throws {
        let lines = try SearchSpace.parse("""
            # BPR
            learning_rate loguniform -8,0
            embedding_size choice [64, 96, 128]

            reg_weight uniform 0.0,0.5
            n_layers quniform 1, 4, 1
            """, source: "bpr.hyper")
        #expect(lines.dimensions.map(\.name) == ["learning_rate", "embedding_size", "reg_weight", "n_layers"])
        #expect(lines.dimensions[0].distribution == .loguniform(low: -8, high: 0))
        #expect(lines.dimensions[1].distribution == .choice([.int(64), .int(96), .int(128)]))
        #expect(lines.dimensions[3].distribution == .quniform(low: 1, high: 4, q: 1))
        #expect(lines.dimensions[1].line == 3)
        let yaml = try SearchSpace.parse("""
            loguniform: {learning_rate: [-8, 0]}
            choice: {embedding_size: [64, 96, 128]}
            uniform: {reg_weight: [0.0, 0.5]}
            quniform: {n_layers: [1, 4, 1]}
            """, source: "bpr.yml")
        #expect(Dictionary(uniqueKeysWithValues: yaml.dimensions.map { ($0.name, $0.distribution) })
                == Dictionary(uniqueKeysWithValues: lines.dimensions.map { ($0.name, $0.distribution) }))
        // The line format round-trips through its description.
        #expect(try SearchSpace.parse(lines.description, source: "x").dimensions.map(\.distribution) == lines.dimensions.map(\.distribution))
    }

    @Test(arguments: [
        ("learning_rate loguniform 0,-8\n", "s.hyper:1", "low 0.0 > high -8.0"),
        ("a uniform 0,1\nembedding_size choice []\n", "s.hyper:2", "choice [] has nothing"),
        ("learning_rate choise [1,2]\n", "s.hyper:1", "did you mean 'choice'"),
        ("learning_rate: 0.01\n", "s.hyper:1", "expected `name type value`"),
        ("learning_rate loguniform -8\n", "s.hyper:1", "takes 2 finite numbers"),
        ("n quniform 1,4,0\n", "s.hyper:1", "step q must be > 0"),
        ("x uniform 0,1\nx uniform 0,2\n", "s.hyper:2", "searched twice (first on line 1)"),
        ("# only a comment\n", "s.hyper", "names no hyperparameter"),
    ])
    func badSpacesNameTheLineAndWhatWasExpected(text: String, location: String, needle: String) {
        let error = #expect(throws: RecBenchError.self) { try SearchSpace.parse(text, source: "s.hyper") }
        #expect(error?.location == location, "\(String(describing: error))")
        #expect(error?.description.contains(needle) == true, "\(String(describing: error))")
    }

    @Test func aSpaceMustNameTheModelsOwnKeysWithFittingTypes() throws {
        func refusal(_ model: String, _ text: String) -> RecBenchError? {
            #expect(throws: RecBenchError.self) {
                let space = try SearchSpace.parse(text, source: "s.hyper")
                _ = try Search.run(SearchRequest(run: RunRequest(model: model, dataset: "absent"), space: space, sampler: RandomSampler(), pruner: nil,
                                                 trials: 1, budgetSeconds: nil), logger: Logger(label: "test"))
            }
        }
        let typo = refusal("BPR", "learning_rate loguniform -8,0\nembeding_size choice [32,64]\n")
        #expect(typo?.location == "s.hyper:2" && typo?.description.contains("did you mean 'embedding_size'") == true, "\(String(describing: typo))")
        let integer = refusal("BPR", "embedding_size uniform 16,128\n")
        #expect(integer?.description.contains("is an integer") == true, "\(String(describing: integer))")
        let untrained = refusal("ItemKNN", "learning_rate loguniform -8,0\n")
        #expect(untrained?.description.contains("not trained by gradient steps") == true, "\(String(describing: untrained))")
        let data = refusal("BPR", "MAX_ITEM_LIST_LENGTH choice [10,20]\n")
        #expect(data?.description.contains("data or run setting") == true, "\(String(describing: data))")
    }

    /// The declared spaces are usable as they stand: every registered model with one passes
    /// the checks a user's file gets (keys it has, integer keys drawn as integers).
    @Test func everyDeclaredSpaceNamesKeysItsModelHas() throws {
        for type in ModelRegistry.models where !type.searchSpace.isEmpty {
            let own = Dictionary(uniqueKeysWithValues: type.parameters.map { ($0.name, $0.defaultValue) })
            for d in type.searchSpace {
                #expect(own[d.name] != nil || d.name == "learning_rate", "\(type.name) searches \(d.name)")
                guard case .int = own[d.name] else { continue }
                switch d.distribution {
                case .choice(let values): #expect(values.allSatisfy { $0.intValue != nil }, "\(type.name).\(d.name)")
                case .quniform(_, _, let q): #expect(q.rounded() == q, "\(type.name).\(d.name)")
                default: Issue.record("\(type.name) draws its integer \(d.name) from \(d.distribution)")
                }
            }
        }
        #expect(ModelRegistry.models.filter { $0.searchSpace.isEmpty }.map { $0.name }.sorted() == ["Pop", "RepeatPop"])
    }

    /// A synthetic objective with a known optimum (lr 10^-3.5, dropout 0.25, size 64).
    static func loss(_ v: [String: ConfigValue]) -> Double {
        let lr = v["learning_rate"]!.doubleValue!, dropout = v["dropout_prob"]!.doubleValue!, size = v["embedding_size"]!.intValue!
        return pow(log10(lr) + 3.5, 2) + 4 * pow(dropout - 0.25, 2) + (size == 64 ? 0 : 0.4)
    }

    static let space = SearchSpace([
        SearchDimension("learning_rate", .loguniform(low: log(1e-6), high: log(1))),
        SearchDimension("dropout_prob", .uniform(low: 0, high: 0.9)),
        SearchDimension("embedding_size", .choice([16, 32, 64, 128, 256].map(ConfigValue.int))),
    ])

    static func best(_ sampler: any TrialSampler, seed: UInt64, trials: Int = 40) -> Double {
        var history: [TrialObservation] = []
        for trial in 0..<trials {
            let values = sampler.propose(trial: trial, space: space, history: history, seed: seed)
            history.append(TrialObservation(values: values, loss: loss(values)))
        }
        return history.map { $0.loss! }.min()!
    }

    @Test func tpeBeatsRandomSearchOnAKnownObjective() {
        let seeds: [UInt64] = Array(1...10)
        let wins = seeds.filter { Self.best(TPESampler(), seed: $0) < Self.best(RandomSampler(), seed: $0) }.count
        #expect(wins >= 8, "TPE won \(wins) of 10 seeds")
    }

    @Test func samplersAreSeededAndStayInsideTheSpace() {
        var history: [TrialObservation] = []
        for trial in 0..<30 {
            let a = TPESampler().propose(trial: trial, space: Self.space, history: history, seed: 7)
            #expect(a == TPESampler().propose(trial: trial, space: Self.space, history: history, seed: 7))
            let lr = a["learning_rate"]!.doubleValue!, dropout = a["dropout_prob"]!.doubleValue!
            #expect(lr >= 1e-6 && lr <= 1 && dropout >= 0 && dropout <= 0.9)
            #expect([16, 32, 64, 128, 256].contains(a["embedding_size"]!.intValue!))
            history.append(TrialObservation(values: a, loss: Self.loss(a)))
        }
        #expect(RandomSampler().propose(trial: 3, space: Self.space, history: [], seed: 1)
                != RandomSampler().propose(trial: 3, space: Self.space, history: [], seed: 2))
        let q = SearchSpace([SearchDimension("n", .quniform(low: 1, high: 4, q: 1))])
        for trial in 0..<20 { #expect(RandomSampler().propose(trial: trial, space: q, history: [], seed: 1)["n"]!.intValue != nil) }
    }

    static func trial(_ number: Int, _ state: TrialRecord.State, curve: [Double]) -> TrialRecord {
        TrialRecord(searchKey: "k", number: number, model: "BPR", state: state, values: [:], validMetric: "MRR@10",
                    objective: curve.max(), curve: curve.enumerated().map { .init(epoch: $0.offset + 1, valid: $0.element) },
                    error: nil, runKey: nil, sameAs: nil, seconds: 1, finishedAt: "", shard: nil)
    }

    @Test func theMedianPrunerWaitsThenCutsBelowTheMedian() {
        let pruner = MedianPruner(startupTrials: 3, warmupEpochs: 2)
        let finished = [0.1, 0.2, 0.3].enumerated().map { Self.trial($0.offset, .finished, curve: [$0.element, $0.element, $0.element]) }
        // Before the warm-up epoch, and with fewer finished trials than the start-up count, nothing is pruned.
        #expect(!pruner.shouldPrune(epoch: 1, previous: 0, best: 0.0, biggerIsBetter: true, earlier: finished))
        #expect(!pruner.shouldPrune(epoch: 3, previous: 2, best: 0.0, biggerIsBetter: true, earlier: Array(finished.prefix(2))))
        // Median at epoch 3 is 0.2: below it is pruned, at or above it is not; pruned and failed trials do not count.
        #expect(pruner.shouldPrune(epoch: 3, previous: 2, best: 0.19, biggerIsBetter: true, earlier: finished))
        let withPruned = finished + [Self.trial(9, .pruned, curve: [0.9, 0.9, 0.9])]
        #expect(!pruner.shouldPrune(epoch: 3, previous: 2, best: 0.2, biggerIsBetter: true, earlier: withPruned))
        #expect(pruner.shouldPrune(epoch: 3, previous: 2, best: 0.21, biggerIsBetter: false, earlier: finished))
    }

    @Test func successiveHalvingKeepsTheTopThirdAtEachRung() {
        let pruner = HalvingPruner(minimumEpochs: 5, reduction: 3)
        let five = (1...5).map(Double.init)
        let earlier = [Self.trial(0, .finished, curve: five.map { $0 * 0.06 }),     // 0.30 at epoch 5
                       Self.trial(1, .pruned, curve: five.map { $0 * 0.04 }),       // 0.20 at epoch 5, pruned there
                       Self.trial(2, .finished, curve: [0.9, 0.9]),                 // never reached the rung
                       Self.trial(3, .failed, curve: five.map { _ in 0.99 })]       // failed trials do not compete
        // Three trials at the rung (two earlier and this one): only the best goes on.
        #expect(pruner.shouldPrune(epoch: 5, previous: 4, best: 0.25, biggerIsBetter: true, earlier: earlier))
        #expect(!pruner.shouldPrune(epoch: 5, previous: 4, best: 0.35, biggerIsBetter: true, earlier: earlier))
        #expect(!pruner.shouldPrune(epoch: 5, previous: 4, best: 0.03, biggerIsBetter: false, earlier: earlier))   // their best: 0.06, 0.04
        #expect(pruner.shouldPrune(epoch: 5, previous: 4, best: 0.05, biggerIsBetter: false, earlier: earlier))
        // Between rungs nothing is pruned; 15 and 45 are the next rungs, which nobody else reached.
        #expect(!pruner.shouldPrune(epoch: 6, previous: 5, best: 0.0, biggerIsBetter: true, earlier: earlier))
        #expect(!pruner.shouldPrune(epoch: 15, previous: 14, best: 0.0, biggerIsBetter: true, earlier: earlier))
        // The first trial at a rung always goes on.
        #expect(!pruner.shouldPrune(epoch: 5, previous: 4, best: 0.0, biggerIsBetter: true, earlier: []))
        // Validated every 10 epochs, a trial reaches rung 5 at epoch 10 and rung 15 at epoch 20, and is compared there with
        // the others' best up to that epoch; epoch 30 passes no rung (45 is next), though both others did better by then.
        let tens = [Self.trial(0, .finished, curve: (1...30).map { Double($0) * 0.01 }), Self.trial(1, .finished, curve: (1...30).map { _ in 0.05 })]
        #expect(pruner.shouldPrune(epoch: 10, previous: 0, best: 0.04, biggerIsBetter: true, earlier: tens))    // theirs: 0.10, 0.05
        #expect(!pruner.shouldPrune(epoch: 10, previous: 0, best: 0.11, biggerIsBetter: true, earlier: tens))
        #expect(pruner.shouldPrune(epoch: 20, previous: 10, best: 0.15, biggerIsBetter: true, earlier: tens))   // theirs: 0.20, 0.05
        #expect(!pruner.shouldPrune(epoch: 30, previous: 20, best: 0.0, biggerIsBetter: true, earlier: tens))
    }
}
