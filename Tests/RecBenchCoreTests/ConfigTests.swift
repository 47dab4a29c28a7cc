import Testing
import RecBenchCore
import Linalg

struct ConfigTests {
    let models = ModelRegistry.parameterNames

    @Test func laterLayersWinAndOriginsAreRecorded() throws {
        let file = try ConfigLayer.yaml("topk: [5]\nseed: 1\n", source: "a.yml")
        let second = try ConfigLayer.yaml("seed: 2\n", source: "b.yml")
        let set = try ConfigLayer.assignments(["seed=3", "eval_args.order=TO"])
        let c = try Config(layers: [file, second, set], modelKeys: models)
        #expect(c["seed"] == .int(3))
        #expect(c.origin(of: "seed") == "--set")
        #expect(c["topk"] == .list([.int(5)]))
        #expect(c.origin(of: "topk") == "a.yml:1")
        #expect(c["metrics"] == ConfigKeys.byName["metrics"]!.defaultValue)
        // eval_args merges entry by entry with the defaults, as in RecBole.
        guard case .map(let args) = c["eval_args"] else { Issue.record("eval_args is not a map"); return }
        #expect(args["order"] == .string("TO"))
        #expect(args["split"] != nil)
    }

    @Test func aLaterLayersEvalArgsReplacesAnEarlierOneWholeAsRecBoleReadsConfigFiles() throws {
        let base = try ConfigLayer.yaml("eval_args: {order: TO, split: {LS: valid_and_test}}\n", source: "base.yml")
        let model = try ConfigLayer.yaml("seed: 1\neval_args: {mode: full}\n", source: "model.yml")
        let c = try Config(layers: [base, model], modelKeys: models)
        let split = try SplitSettings(c)
        #expect(split.order == .random && split.strategy == .ratio([0.8, 0.1, 0.1]))   // RecBole's defaults, not base.yml's
        #expect(c.notices.contains { $0.hasPrefix("model.yml:2: eval_args replaces base.yml:1's whole") && $0.contains("order: TO")
            && $0.contains("split: ") && $0.contains("no longer apply") })
        // `--set eval_args.KEY=V` changes one entry and keeps the rest, with no note.
        let entry = try Config(layers: [base, try ConfigLayer.assignments(["eval_args.mode=full"])], modelKeys: models)
        let kept = try SplitSettings(entry)
        #expect(kept.order == .time && kept.strategy == .leaveOneOut(validAndTest: true))
        #expect(!entry.notices.contains { $0.contains("replaces") })
        // A whole `--set eval_args=...` replaces, like a file; entries it names are not "lost".
        let whole = try Config(layers: [base, try ConfigLayer.assignments(["eval_args={order: TO}"])], modelKeys: models)
        #expect(try SplitSettings(whole).strategy == .ratio([0.8, 0.1, 0.1]))
        #expect(whole.notices.contains { $0.contains("split: ") && !$0.contains("order: TO") && $0.contains("no longer applies") })
        // An entry set over a null eval_args still gets the other defaults.
        let overNull = try Config(layers: [try ConfigLayer.yaml("eval_args: ~\n", source: "n.yml"), try ConfigLayer.assignments(["eval_args.order=TO"])],
                                  modelKeys: models)
        #expect(try SplitSettings(overNull).order == .time && SplitSettings(overNull).strategy == .ratio([0.8, 0.1, 0.1]))
        // Entry-by-entry keys work for any map: the distribution survives a new sample_num.
        let popular = try ConfigLayer.yaml("train_neg_sample_args: {distribution: popularity, sample_num: 1}\n", source: "p.yml")
        let more = try Config(layers: [popular, try ConfigLayer.assignments(["train_neg_sample_args.sample_num=3"])], modelKeys: models)
        #expect(more["train_neg_sample_args"] == .map(["distribution": .string("popularity"), "sample_num": .int(3)]))
    }

    @Test func unknownKeyFailsWithItsLineAndASuggestion() {
        let e = #expect(throws: RecBenchError.self) {
            try Config(layers: [try ConfigLayer.yaml("seed: 1\nreg_weigt: 10\n", source: "a.yml")], modelKeys: models)
        }
        #expect(e?.location == "a.yml:2")
        #expect(e?.field == "reg_weigt")
        #expect(e?.message.contains("did you mean 'reg_weight'") == true)
    }

    /// A short word is a typo only one edit away; nothing is offered for a word unlike every key.
    @Test func suggestionsAreTyposNotGuesses() {
        let keys = ["tol", "k", "topk", "seed", "epochs"]
        #expect(Suggestion.nearest(to: "sead", in: keys) == "seed")
        #expect(Suggestion.nearest(to: "epohcs", in: keys) == "epochs")
        #expect(Suggestion.nearest(to: "foo", in: keys) == nil)   // two edits from 'tol'
        #expect(Suggestion.nearest(to: "1", in: keys) == nil)     // one edit from 'k', but every letter changed
    }

    @Test func recboleInfrastructureKeysAreAcceptedWithANotice() throws {
        let c = try Config(layers: [try ConfigLayer.yaml("gpu_id: '0'\nuse_gpu: false\n", source: "a.yml")], modelKeys: models)
        #expect(c.notices.count == 1)   // one line per config file
        #expect(c.notices[0].contains("gpu_id") && c.notices[0].contains("use_gpu"))
        #expect(c["gpu_id"] == .null)   // not stored in the effective config
    }

    @Test func unsupportedDataKeysAreRejectedNotIgnored() {
        #expect(throws: RecBenchError.self) {
            try Config(layers: [try ConfigLayer.yaml("val_interval: {rating: '[3,inf)'}\n", source: "a.yml")], modelKeys: models)
        }
    }

    @Test func yamlScalarsResolveAsPyYAMLDoes() throws {
        let layer = try ConfigLayer.yaml("a: ~\nb: True\nc: 250\nd: 0.5\ne: none\nf: '10'\ng: [10, 20]\n", source: "t")
        #expect(layer.values["a"] == .null)
        #expect(layer.values["b"] == .bool(true))
        #expect(layer.values["c"] == .int(250))
        #expect(layer.values["d"] == .double(0.5))
        #expect(layer.values["e"] == .string("none"))
        #expect(layer.values["f"] == .string("10"))
        #expect(layer.values["g"] == .list([.int(10), .int(20)]))
        // What RecBole 1.2.1's own loader (Config._build_yaml_loader, PyYAML 6) made of each text, run here.
        let pyYAML: [(String, ConfigValue)] = [
            ("017", .int(15)), ("0o17", .string("0o17")), ("0b101", .int(5)), ("0x1F", .int(31)), ("1_000", .int(1000)),
            ("1:30", .int(90)), ("-1:30", .int(-90)), ("1:30.5", .double(90.5)), ("1e-3", .double(0.001)), ("1E3", .double(1000)),
            ("1.5e3", .double(1500)), ("2.", .double(2)), ("inf", .string("inf")), (".inf", .double(.infinity)),
            ("-.Inf", .double(-.infinity)), ("nan", .string("nan")), ("True", .bool(true)), ("tRue", .string("tRue")),
            ("YES", .bool(true)), ("On", .bool(true)), ("off", .bool(false)), ("Null", .null), ("NULL", .null),
            ("nUll", .string("nUll")), ("010.5", .double(10.5)), ("+12", .int(12)), ("-0", .int(0)), ("0.1_5", .double(0.15)),
            ("1__0", .int(10)), ("08", .string("08")), ("09.5", .double(9.5)), ("1e+3", .double(1000)), ("0x", .string("0x")),
            ("12e", .string("12e")),
        ]
        for (text, expected) in pyYAML {
            #expect(try ConfigLayer.yaml("k: \(text)\n", source: "t").values["k"] == expected, "\(text)")
        }
        #expect(try ConfigLayer.yaml("k: .NaN\n", source: "t").values["k"]?.doubleValue?.isNaN == true)
    }

    /// Explicit tags as RecBole 1.2.1's loader constructs them (each expected value is what
    /// `Config._build_yaml_loader` returned here); tags it reads as bytes, dates, tuples of its own
    /// or refuses are one error naming the file, line and key.
    @Test func explicitYamlTagsAreConstructedAsPyYAMLDoes() throws {
        let pyYAML: [(String, ConfigValue)] = [
            ("!!str 017", .string("017")), ("!!str true", .string("true")), ("!!int '017'", .int(15)), ("!!int \"0x1F\"", .int(31)),
            ("!!float 1", .double(1)), ("!!float '1e-3'", .double(0.001)), ("!!bool 'yes'", .bool(true)), ("!!null ''", .null),
            ("! 017", .int(15)), ("!!str", .string("")), ("!!float .inf", .double(.infinity)), ("!!float inf", .double(.infinity)),
            ("!!python/tuple [1, 2]", .list([.int(1), .int(2)])),
            ("!!float 010", .double(10)), ("!!float 0777", .double(777)), ("!!float 1:30", .double(90)), ("!!float '1:30.5'", .double(90.5)),
            ("!!float -.INF", .double(-.infinity)), ("!!float ' 1.5 '", .double(1.5)), ("!!float 1_000.5", .double(1000.5)),
            ("!!float 2.", .double(2)), ("!!float '-1e-3'", .double(-0.001)), ("!!int 0o17", .int(15)), ("!!int 1:75", .int(135)),
            ("!!int ' 12 '", .int(12)), ("!!int _1", .int(1)), ("!!int '1:-30'", .int(30)), ("!!int -017", .int(-15)),
            ("!!int 0b1_01", .int(5)), ("!!int -0x1F", .int(-31)), ("!!int ' 012'", .int(12)), ("! '017'", .int(15)),
            ("! \"true\"", .bool(true)), ("!!python/str 017", .string("017")), ("!!python/int '017'", .int(15)),
            ("!!python/none x", .null), ("!!python/float 1", .double(1)), ("!!python/bool on", .bool(true)),
            ("!!python/list [1]", .list([.int(1)])), ("!!python/dict {a: 1}", .map(["a": .int(1)])),
        ]
        for (text, expected) in pyYAML {
            #expect(try ConfigLayer.yaml("a: 1\nk: \(text)\n", source: "t").values["k"] == expected, "\(text)")
        }
        #expect(try ConfigLayer.yaml("k: !!float .NaN\n", source: "t").values["k"]?.doubleValue?.isNaN == true)
        for text in ["!!int abc", "!!binary aGk=", "!foo 1", "!!timestamp 2020-01-01", "!!bool 1", "!!set {a: ~}", "!!float 0x10", "!!int 0X1F",
                     "!!int 1.5"] {
            let e = #expect(throws: RecBenchError.self, "\(text)") { try ConfigLayer.yaml("a: 1\nk: \(text)\n", source: "t.yml") }
            #expect(e?.location == "t.yml:2" && e?.field == "k", "\(text): \(String(describing: e))")
        }
        let set = #expect(throws: RecBenchError.self) { try ConfigLayer.assignments(["seed=!!int x"]) }
        #expect(set?.field == "seed" && set?.message.contains("!!int") == true)
        // Keys: a tag is held to the key's text, and a list or map as a key is refused, not skipped.
        #expect(try ConfigLayer.yaml("!!str epochs: 2\n", source: "t").values["epochs"] == .int(2))
        for text in ["a: 1\n!!bool epochs: 3\n", "a: 1\n? [epochs, seed]\n: 3\n", "a: 1\n!!int seed: 3\n"] {
            let e = #expect(throws: RecBenchError.self, "\(text)") { try ConfigLayer.yaml(text, source: "t.yml") }
            #expect(e?.location == "t.yml:2" && e?.message.contains("key") == true, "\(text): \(String(describing: e))")
        }
    }

    @Test func brokenYamlAndDuplicateKeysNameTheLine() {
        let broken = #expect(throws: RecBenchError.self) { try ConfigLayer.yaml("a: [1, 2\nb: 3\n", source: "x.yml") }
        #expect(broken?.location.hasPrefix("x.yml:") == true)
        let twice = #expect(throws: RecBenchError.self) { try ConfigLayer.yaml("a: 1\na: 2\n", source: "x.yml") }
        #expect(twice?.location.hasPrefix("x.yml:") == true)
        #expect(throws: RecBenchError.self) { try ConfigLayer.yaml("- 1\n- 2\n", source: "x.yml") }
    }

    @Test func typedSettingsRejectBadValues() throws {
        func settings(_ yaml: String) throws -> EvaluationSettings {
            try EvaluationSettings(Config(layers: [try ConfigLayer.yaml(yaml, source: "t.yml")], modelKeys: models))
        }
        #expect(try settings("metrics: [recall, ndcg]\ntopk: 5\nvalid_metric: NDCG@5\n").keys == ["recall@5", "ndcg@5"])
        // GAUC has no cutoff: one key, which valid_metric may name as RecBole spells it.
        #expect(try settings("metrics: [ndcg, gauc]\ntopk: [5, 10]\nvalid_metric: GAUC\n").keys == ["ndcg@5", "ndcg@10", "gauc"])
        #expect(throws: RecBenchError.self) { try settings("metrics: [ndcg, gauc]\nvalid_metric: GAUC@10\n") }
        #expect(throws: RecBenchError.self) { try settings("metrics: [AUC]\nvalid_metric: AUC\n") }   // a value metric
        #expect(throws: RecBenchError.self) { try settings("metrics: [Recal]\n") }
        #expect(throws: RecBenchError.self) { try settings("topk: [0]\n") }
        #expect(throws: RecBenchError.self) { try settings("history_mask: all\n") }
        #expect(throws: RecBenchError.self) { try settings("valid_metric: MAP@10\n") }   // MAP is not in the default metrics
        #expect(throws: RecBenchError.self) { try settings("valid_metric: MRR@20\n") }   // 20 is not in the default topk
    }

    /// Values RecBole 1.2.1 refuses or reads otherwise, which recbench once accepted silently:
    /// valid_metric_bigger follows the metric (an explicit contradiction is an error), an unordered
    /// eval_args or a TS split RecBole cannot make, a bare number as an interval, a distribution that is no name.
    @Test func recBolesOwnRulesAreNotSilentlyBent() throws {
        func config(_ yaml: String) throws -> Config { try Config(layers: [try ConfigLayer.yaml(yaml, source: "t.yml")], modelKeys: models) }
        #expect(try EvaluationSettings(config("metrics: [GiniIndex, MRR]\nvalid_metric: GiniIndex@10\n")).validMetricBigger == false)
        #expect(try EvaluationSettings(config("metrics: [GiniIndex, MRR]\nvalid_metric: MRR@10\n")).validMetricBigger == true)
        #expect(try EvaluationSettings(config("valid_metric_bigger: true\n")).validMetricBigger == true)
        let contradiction = #expect(throws: RecBenchError.self) { try EvaluationSettings(config("valid_metric_bigger: false\n")) }
        #expect(contradiction?.message.contains("mrr@10") == true && contradiction?.location.hasPrefix("t.yml:") == true)
        // group_by: ~ or none is RecBole's ungrouped ratio split; TS is read as RecBole 1.2.1 reads it, and refused where it fails.
        #expect(try SplitSettings(config("eval_args: {group_by: ~, order: TO, split: {RS: [0.8, 0.1, 0.1]}}\n")).grouping == .none)
        #expect(try SplitSettings(config("eval_args: {group_by: none, order: TO, split: {RS: [0.8, 0.1, 0.1]}}\n")).grouping == .none)
        #expect(try SplitSettings(config("eval_args: {group_by: user, order: TO, split: {TS: [8, 1, 1]}}\n")).strategy == .timeBoundary([8, 1, 1]))
        let item = #expect(throws: RecBenchError.self) { try SplitSettings(config("eval_args: {group_by: item, order: TO, split: {RS: [8, 1, 1]}}\n")) }
        #expect(item?.message.contains("user or none") == true)
        let twoRatios = #expect(throws: RecBenchError.self) { try SplitSettings(config("eval_args: {order: TO, split: {TS: [0.9, 0.1]}}\n")) }
        #expect(twoRatios?.message.contains("3 non-negative ratios") == true)
        let shuffled = #expect(throws: RecBenchError.self) { try SplitSettings(config("eval_args: {order: RO, split: {TS: [0.8, 0.1, 0.1]}}\n")) }
        #expect(shuffled?.message.contains("order: TO") == true)
        #expect(throws: RecBenchError.self) { try SplitSettings(config("eval_args: {group_by: user, order: ~, split: {RS: [0.8, 0.1, 0.1]}}\n")) }
        let bare = #expect(throws: RecBenchError.self) { try DataSettings(config("dataset: tiny\ndata_path: data/\nuser_inter_num_interval: 5\n")) }
        #expect(bare?.message.contains("\"[5,inf)\"") == true)
        #expect(throws: RecBenchError.self) { try TrainingSettings(config("train_neg_sample_args: {distribution: 5, sample_num: 1}\n")) }
    }

    /// clip_grad_norm as torch's clip_grad_norm_: the norm of all gradients together, scaled by
    /// max_norm / (norm + 1e-6) only when that is below 1; its entries checked.
    @Test func gradientClippingScalesTheWholeStep() throws {
        func clipping(_ yaml: String) throws -> GradientClipping? {
            try TrainingSettings(Config(layers: [try ConfigLayer.yaml(yaml, source: "t.yml")], modelKeys: models)).clipping
        }
        #expect(try clipping("epochs: 1\n") == nil)
        let two = try #require(try clipping("clip_grad_norm: {max_norm: 1}\n"))
        let g = ["b": Matrix(rows: 1, columns: 1, values: [4]), "a": Matrix(rows: 1, columns: 1, values: [3])]
        let scaled = two.clipped(g)
        #expect(scaled["a"]!.values[0] == 3 * Float(1 / (5 + 1e-6)) && scaled["b"]!.values[0] == 4 * Float(1 / (5 + 1e-6)))
        #expect(try #require(try clipping("clip_grad_norm: {max_norm: 10}\n")).clipped(g)["b"]!.values == [4])
        let inf = try #require(try clipping("clip_grad_norm: {max_norm: 2, norm_type: inf}\n"))
        #expect(inf.clipped(g)["b"]!.values[0] == 4 * Float(2 / (4 + 1e-6)))
        for bad in ["{max_norm: -1}", "{max_norm: 5, norm: 2}", "{max_norm: 5, norm_type: two}", "5"] {
            #expect(throws: RecBenchError.self, "\(bad)") { try clipping("clip_grad_norm: \(bad)\n") }
        }
    }

    @Test func intervalsParseRecBoleSyntax() throws {
        let i = try CountInterval(parsing: "(0,3];[10,inf)")
        #expect(!i.contains(0) && i.contains(1) && i.contains(3) && !i.contains(4) && i.contains(10) && i.contains(1_000_000))
        #expect(throws: RecBenchError.self) { try CountInterval(parsing: "[5,inf") }
        #expect(throws: RecBenchError.self) { try CountInterval(parsing: "[9,3]") }
    }

    @Test func everyDocumentedKeyAndModelParameterIsInTheDocumentation() throws {
        let readme = try String(contentsOfFile: Fixtures.repoRoot + "/README.md", encoding: .utf8)
        let configuration = try String(contentsOfFile: Fixtures.repoRoot + "/docs/configuration.md", encoding: .utf8)
        for key in ConfigKeys.global where key.role == .used {
            #expect(configuration.contains("`\(key.name)`"), "docs/configuration.md lacks config key \(key.name)")
        }
        for model in ModelRegistry.models {
            #expect(readme.contains(model.name), "README lacks model \(model.name)")
            for p in model.parameters { #expect(readme.contains("`\(p.name)`"), "README lacks \(model.name).\(p.name)") }
        }
    }
}

import Foundation

/// A few hundred bytes of nested YAML aliases must fail fast, not expand to 10⁹ values. The parse
/// itself is timed: a suite's time limit counts from the test's start, which on a loaded 2-core host
/// running the suite's tests in parallel came 88 s after its start once (the limit only stops a hang).
@Test(.timeLimit(.minutes(10))) func aYamlAliasBombFailsFast() throws {
    var yaml = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    let names = Array("bcdefghij").map(String.init)
    var previous = "a"
    for name in names {
        yaml += "\(name): &\(name) [" + Array(repeating: "*\(previous)", count: 10).joined(separator: ", ") + "]\n"
        previous = name
    }
    #expect(yaml.utf8.count < 700)
    let start = ContinuousClock.now
    let e = #expect(throws: RecBenchError.self) { try ConfigLayer.yaml(yaml, source: "bomb.yml") }
    #expect(ContinuousClock.now - start < .seconds(5), "the bomb took \(ContinuousClock.now - start) to refuse")
    #expect(e?.location.hasPrefix("bomb.yml:") == true && e?.message.contains("aliases") == true)
    // Aliases themselves are fine: a small one still loads.
    let fine = "a: &a [x, x]\nb: [*a, *a]\n"
    #expect(try ConfigLayer.yaml(fine, source: "fine.yml").values["b"] == .list([.list([.string("x"), .string("x")]), .list([.string("x"), .string("x")])]))
}
