import Foundation
import Testing

/// One malformed input: files written into a fresh workspace, a command, and what its one
/// stderr line must mention. Every case must fail with a non-zero exit, exactly one stderr
/// line, and no file under the results folder (`out/`).
struct HostileCase: Sendable, CustomTestStringConvertible {
    let name: String
    /// Files to write, relative to the workspace root (the default `.inter` is replaced when
    /// `data/tiny/tiny.inter` is among them).
    var files: [String: [UInt8]] = [:]
    /// The command; `run --model Pop --config run.yml` plus these when it starts with "+".
    var arguments: [String] = []
    var mentions: [String]

    var testDescription: String { name }

    /// The full command line.
    var command: [String] {
        guard let first = arguments.first, first != "+" else { return ["run", "--model", "Pop", "--config", "run.yml"] + arguments.dropFirst() }
        return arguments
    }
}

extension HostileCase {
    static let header = "user_id:token\titem_id:token\ttimestamp:float\n"
    static let oneGoodRow = "u1\ti1\t1\n"

    /// A case whose `.inter` is `text` (header included when wanted).
    static func inter(_ name: String, _ text: String, _ mentions: [String]) -> HostileCase {
        HostileCase(name: name, files: ["data/tiny/tiny.inter": Array(text.utf8)], mentions: mentions)
    }

    /// A case whose `.inter` is the header, a good row, then `bytes` (the bad line, line 3).
    static func row(_ name: String, _ bytes: [UInt8], _ mentions: [String]) -> HostileCase {
        HostileCase(name: name, files: ["data/tiny/tiny.inter": Array((header + oneGoodRow).utf8) + bytes + [0x0A]], mentions: ["tiny.inter:3"] + mentions)
    }

    /// A case run with extra `--set` assignments.
    static func set(_ name: String, _ assignments: [String], _ mentions: [String], model: String = "Pop") -> HostileCase {
        HostileCase(name: name, arguments: ["run", "--model", model, "--config", "run.yml"] + assignments.flatMap { ["--set", $0] }, mentions: mentions)
    }

    /// A case with one extra config file `extra.yml` holding `yaml`.
    static func yaml(_ name: String, _ yaml: String, _ mentions: [String]) -> HostileCase {
        HostileCase(name: name, files: ["extra.yml": Array(yaml.utf8)], arguments: ["+", "--config", "extra.yml"], mentions: mentions)
    }

    /// A case with `.item` (or `.user`) content loaded through load_col.
    static func side(_ name: String, _ suffix: String, _ text: String?, columns: String, _ mentions: [String]) -> HostileCase {
        HostileCase(name: name, files: text.map { ["data/tiny/tiny.\(suffix)": Array($0.utf8)] } ?? [:],
                    arguments: ["+", "--set", "load_col={inter: [user_id, item_id, timestamp], \(suffix): [\(columns)]}"], mentions: mentions)
    }

    /// A `convert` case on `interact.csv` (output under out/, which must stay empty).
    static func csv(_ name: String, _ text: String, _ mentions: [String], extra: [String] = []) -> HostileCase {
        HostileCase(name: name, files: ["interact.csv": Array(text.utf8)],
                    arguments: ["convert", "--inter", "interact.csv", "--name", "x", "--out", "out/conv"] + extra, mentions: mentions)
    }

    /// A YAML document of `depth` nested aliases, each level nine times the one below.
    static var aliasBomb: String {
        var lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x]"]
        for d in 1..<9 { lines.append("l\(d): &l\(d) [" + Array(repeating: "*l\(d - 1)", count: 9).joined(separator: ", ") + "]") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Six users with 100 items each: a 600-item catalogue, whose Gram matrix (1.4 MB) is
    /// more than a 1 MiB budget.
    static let sixHundredItems = header + (0..<6).flatMap { u in (0..<100).map { "u\(u)\ti\(u * 100 + $0)\t\($0)\n" } }.joined()

    /// One more item than a dense square matrix can have in 32-bit LAPACK (46,341), over six users.
    static let tooManyItemsForLapack = header + (0..<46_341).map { "u\($0 % 6)\ti\($0)\t\($0)\n" }.joined()

    static let oneInteractionEach = header + (0..<6).map { "u\($0)\ti\($0)\t\($0)\n" }.joined()
}

/// Issue 16's catalogue: every class of malformed input a user can hand recbench — atomic
/// files, side files, configs, data that leaves nothing to evaluate, resource limits,
/// convert CSVs and the filesystem — each with the one-line error it must get.
@Suite struct CatalogueTests {
    static let cases: [HostileCase] = dataFileCases + sideFileCases + configCases + dataLeftCases + convertCases

    static let dataFileCases: [HostileCase] = [
        .inter("empty .inter", "", ["tiny.inter:1", "empty file"]),
        .inter("header only", HostileCase.header, ["tiny.inter", "no interaction rows"]),
        .inter("header column without a type", "user_id:token\titem_id\ttimestamp:float\n" + HostileCase.oneGoodRow,
               ["tiny.inter:1", "'item_id'", "malformed header"]),
        .inter("unknown column type", "user_id:token\titem_id:tokn\ttimestamp:float\n" + HostileCase.oneGoodRow,
               ["tiny.inter:1", "unknown column type 'tokn'", "did you mean 'token'"]),
        .inter("lines ending in a bare carriage return", (HostileCase.header + HostileCase.oneGoodRow).replacingOccurrences(of: "\n", with: "\r"),
               ["tiny.inter:1", "bare carriage return"]),
        .inter("column named twice", "user_id:token\tuser_id:token\ttimestamp:float\n" + HostileCase.oneGoodRow,
               ["tiny.inter:1", "appears twice"]),
        .inter("time column of type token", "user_id:token\titem_id:token\ttimestamp:token\nu1\ti1\tnoon\n",
               ["tiny.inter:1", "'timestamp'", "must have type float"]),
        .row("too few fields", Array("u2\ti2".utf8), ["expected 3 fields", "found 2"]),
        .row("too many fields", Array("u2\ti2\t5\textra".utf8), ["expected 3 fields", "found 4"]),
        .row("text in a float column", Array("u2\ti2\tnoon".utf8), ["'timestamp'", "not a number"]),
        .row("infinite timestamp", Array("u2\ti2\tinf".utf8), ["'timestamp'", "'inf'"]),
        .row("NaN timestamp", Array("u2\ti2\tnan".utf8), ["'timestamp'", "'nan'"]),
        .row("timestamp beyond float range", Array("u2\ti2\t1e400".utf8), ["'timestamp'", "outside the range"]),
        .row("NUL byte in a token", [0x75, 0x00, 0x32, 0x09, 0x69, 0x32, 0x09, 0x35], ["'user_id'", "NUL"]),
        .row("invalid UTF-8 in a token", [0x75, 0xFF, 0x32, 0x09, 0x69, 0x32, 0x09, 0x35], ["'user_id'", "not valid UTF-8"]),
        .row("empty user id", Array("\ti2\t5".utf8), ["'user_id'", "empty id"]),
        .row("empty item id", Array("u2\t\t5".utf8), ["'item_id'", "empty id"]),
        .row("an item id pandas reads as missing", Array("u2\tNULL\t5".utf8), ["'item_id'", "'NULL'", "missing value to RecBole"]),
        .row("a quote left open", Array("u2\t\"i2\t5".utf8), ["tiny.inter:", "does not close on this line"]),
        .row("a 10 MB line", Array("u2\t".utf8) + [UInt8](repeating: 0x78, count: 10_000_000) + Array("\t5".utf8), ["more than the 1 MiB"]),
        HostileCase(name: "binary garbage", files: ["data/tiny/tiny.inter": (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 167 &+ 13) }],
                    mentions: ["tiny.inter:1"]),
        .inter("a 100 kB header name", "user_id:token\t" + String(repeating: "x", count: 100_000) + "\n", ["tiny.inter:1", "more characters"]),
        .set("load_col names an absent column", ["load_col={inter: [user_id, item_id, rating]}"], ["tiny.inter:1", "'rating'", "missing from the header"]),
        .set("id field not loaded", ["USER_ID_FIELD=customer"], ["'load_col'", "must include 'customer'"]),
        .set("time order without a time column", ["load_col={inter: [user_id, item_id]}"], ["'eval_args.order'", "no time column"]),
        HostileCase(name: "dataset not found", arguments: ["+", "--dataset", "absent"], mentions: ["absent/absent.inter", "not found"]),
        HostileCase(name: "data_path is a file", files: ["plain": Array("x".utf8)], arguments: ["+", "--set", "data_path=plain"],
                    mentions: ["plain/tiny/tiny.inter", "not found"]),
    ]

    static let sideFileCases: [HostileCase] = [
        .side(".item header only", "item", "item_id:token\tprice:float\n", columns: "item_id, price", ["tiny.item", "has a header but no rows"]),
        .side(".item lists none of the items", "item", "item_id:token\tprice:float\nzz\t1\n", columns: "item_id, price",
              ["tiny.item", "lists none of the interactions' items"]),
        .side(".item id listed twice", "item", "item_id:token\tprice:float\ni1\t1\ni1\t2\n", columns: "item_id, price",
              ["tiny.item:3", "'i1' is listed again (first on line 2)"]),
        .side(".item short row", "item", "item_id:token\tprice:float\ni1\t1\ni2\n", columns: "item_id, price", ["tiny.item:3", "expected 2 fields"]),
        .side(".item without its id column", "item", "price:float\n1\n", columns: "price", ["tiny.item", "'item_id'", "type token"]),
        .side(".user listed but absent", "user", nil, columns: "user_id, age", ["tiny.user", "file not found"]),
    ]

    static let configCases: [HostileCase] = [
        .yaml("invalid YAML", "topk: [2\n", ["extra.yml:", "invalid YAML"]),
        .yaml("top level not a mapping", "- a\n- b\n", ["extra.yml:1", "must be a mapping"]),
        .yaml("YAML alias bomb", HostileCase.aliasBomb, ["extra.yml:", "expands to more than"]),
        .yaml("misspelt key", "topkk: [5]\n", ["extra.yml:1", "'topkk'", "did you mean 'topk'"]),
        HostileCase(name: "config file missing", arguments: ["run", "--model", "Pop", "--config", "nope.yml"], mentions: ["nope.yml", "not found"]),
        HostileCase(name: "unknown model", arguments: ["run", "--model", "EASY", "--config", "run.yml"], mentions: ["unknown model", "did you mean 'EASE'"]),
        HostileCase(name: "model name with swapped letters", arguments: ["sweep", "--models", "Pop,BRP", "--config", "run.yml"],
                    mentions: ["'BRP'", "did you mean 'BPR'"]),
        .set("integer key given text", ["epochs=many"], ["'epochs'", "expected an integer"], model: "BPR"),
        .set("zero epochs", ["epochs=0"], ["'epochs'", "at least 1"], model: "BPR"),
        .set("negative learning rate", ["learning_rate=-1"], ["'learning_rate'", "greater than 0"], model: "BPR"),
        .set("negative weight decay", ["weight_decay=-1"], ["'weight_decay'", "at least 0"], model: "BPR"),
        .set("zero negatives", ["train_neg_sample_args={distribution: uniform, sample_num: 0}"], ["'train_neg_sample_args'", "sample_num"], model: "BPR"),
        .set("embedding size beyond its range", ["embedding_size=1000000000"], ["'embedding_size'", "must lie in"], model: "BPR"),
        .set("GCMC with three classes on implicit data", ["class_num=3"], ["'class_num'", "two classes"], model: "GCMC"),
        .set("DMF towers of different widths", ["item_hidden_size_list=[64, 32]"], ["'item_hidden_size_list'", "as wide as"], model: "DMF"),
        .set("DMF on ratings", ["inter_matrix_type=rating"], ["'inter_matrix_type'", "implicit feedback"], model: "DMF"),
        .set("NNCF neighbours too few to convolve", ["neigh_num=8"], ["'neigh_num'", "at least 9 neighbours"], model: "NNCF"),
        .set("NNCF knn neighbours", ["neigh_info_method=knn"], ["'neigh_info_method'", "TypeError"], model: "NNCF"),
        .set("DGCF factors not dividing the width", ["n_factors=5"], ["'n_factors'", "does not divide embedding_size 64"], model: "DGCF"),
        .set("FNN without hidden layers", ["mlp_hidden_size=[]"], ["'mlp_hidden_size'", "at least one layer"], model: "FNN"),
        .set("NFM without hidden layers", ["mlp_hidden_size=[]"], ["'mlp_hidden_size'", "at least one layer"], model: "NFM"),
        .set("DCN without cross layers", ["cross_layer_num=0"], ["'cross_layer_num'"], model: "DCN"),
        .set("xDeepFM with an odd CIN layer", ["cin_layer_size=[100, 51, 100]"], ["'cin_layer_size'", "51 is odd", "split in half"], model: "xDeepFM"),
        .set("AutoInt heads not dividing the attention", ["num_heads=3"], ["'num_heads'", "not a multiple of num_heads 3"], model: "AutoInt"),
        .set("AutoInt with two dropout probabilities", ["dropout_probs=[0.2, 0.2]"], ["'dropout_probs'", "needs 3 probabilities"], model: "AutoInt"),
        .set("FwFM with field groups", ["fields={0: [user_id], 1: [item_id]}"], ["'fields'", "every feature as its own field"], model: "FwFM"),
        .set("NAIS with two penalty weights", ["reg_weights=[0.1, 0.1]"], ["'reg_weights'", "needs 3 weights"], model: "NAIS"),
        .set("negative split ratio", ["eval_args={split: {RS: [0.8, -0.1, 0.3]}}"], ["'eval_args.split.RS'"]),
        .set("four split ratios", ["eval_args={split: {RS: [0.5, 0.2, 0.2, 0.1]}}"], ["'eval_args.split.RS'"]),
        .set("unsupported eval mode", ["eval_args={mode: sampled}"], ["'eval_args.mode'", "expected full, labeled, uniN or popN"]),
        .set("labelled evaluation of a model that only ranks", ["eval_args={mode: labeled}", "metrics=[AUC]", "valid_metric=auc"],
             ["'eval_args.mode'", "context-aware"]),
        .set("unknown metric", ["metrics=[Recal]"], ["unknown metric 'Recal'", "did you mean 'Recall'"]),
        HostileCase(name: "per-user values of a labelled run",
                    arguments: ["run", "--model", "FM", "--config", "run.yml", "--per-user"]
                        + ["eval_args={mode: labeled}", "metrics=[AUC]", "valid_metric=auc", "threshold={rating: 4}"].flatMap { ["--set", $0] },
                    mentions: ["'--per-user'", "labeled"]),
        HostileCase(name: "ranked lists of a labelled run",
                    arguments: ["run", "--model", "FM", "--config", "run.yml", "--save-lists"]
                        + ["eval_args={mode: labeled}", "metrics=[AUC]", "valid_metric=auc", "threshold={rating: 4}"].flatMap { ["--set", $0] },
                    mentions: ["'--save-lists'", "labeled", "ranks nothing"]),
        HostileCase(name: "a labelled sweep's lists",
                    arguments: ["sweep", "--config", "run.yml", "--models", "FM", "--save-lists"]
                        + ["eval_args={mode: labeled}", "metrics=[AUC]", "valid_metric=auc", "threshold={rating: 4}"].flatMap { ["--set", $0] },
                    mentions: ["'--save-lists'", "labelled rows", "drop --save-lists"]),
        .set("a RecBole value metric without labelled evaluation", ["metrics=[AUC]"], ["'AUC' is a value metric", "eval_args.mode: labeled"]),
        .set("zero cutoff", ["topk=[0]"], ["'topk'", "positive integers"]),
        .set("negative cutoff", ["topk=[-3]"], ["'topk'", "positive integers"]),
        .set("no cutoffs", ["topk=[]"], ["'topk'", "positive integers"]),
        .set("cutoff beyond the catalogue", ["topk=[2,1000000000]"], ["'topk'", "larger than the catalogue"]),
        .set("valid_metric not computed", ["valid_metric=MRR@7"], ["'valid_metric'", "not among the computed metrics"]),
        .set("zero train batch", ["train_batch_size=0"], ["'train_batch_size'", "at least 1"], model: "BPR"),
        .set("zero eval batch", ["eval_batch_size=0"], ["'eval_batch_size'", "at least 1"]),
        .set("fractional seed", ["seed=1.5"], ["'seed'", "expected an integer"]),
        .set("unknown history mask", ["history_mask=maybe"], ["'history_mask'", "recbole, seen or none"]),
        .set("user and item the same column", ["ITEM_ID_FIELD=user_id"], ["'ITEM_ID_FIELD'"]),
        .set("user id field set to the item's column", ["USER_ID_FIELD=item_id"], ["'USER_ID_FIELD'", "same column as ITEM_ID_FIELD"]),
        .set("a transformer initialised at zero", ["initializer_range=0"], ["'initializer_range'", "greater than 0 and at most 10.0"], model: "SASRec"),
        .set("NaN tail ratio", ["tail_ratio=.nan"], ["'tail_ratio'", "must be a finite number, got nan"]),
        .set("a model that diverges in its only epoch", ["epochs=1", "learning_rate=1e30"],
             ["'learning_rate'", "diverged at epoch 1", "or scale down large float features"], model: "FM"),
        HostileCase(name: "Hogwild BPR diverging blames its own step size",   // at epoch 2: --quiet keeps epoch 1's line off stderr
                    arguments: ["run", "--model", "BPR", "--config", "run.yml", "--quiet"]
                        + ["epochs=3", "threads=1", "hogwild=true", "hogwild_learning_rate=100", "hogwild_regularization=100"].flatMap { ["--set", $0] },
                    mentions: ["'hogwild_learning_rate'", "diverged", "try a lower hogwild_learning_rate"]),
        .set("a BERT4Rec mask that keeps no position", ["mask_ratio=0.01"], ["'mask_ratio'", "masks no position", "at least 0.02"], model: "BERT4Rec"),
        .set("a sequence too short for BERT4Rec's default mask", ["MAX_ITEM_LIST_LENGTH=4"], ["'MAX_ITEM_LIST_LENGTH'", "masks no position", "at least 0.25"],
             model: "BERT4Rec"),
        HostileCase(name: "a search range reaching a mask of no position", files: ["s.hyper": Array("mask_ratio uniform 0.01,0.5\n".utf8)],
                    arguments: ["tune", "--model", "BERT4Rec", "--config", "run.yml", "--trials", "2", "--space", "s.hyper"],
                    mentions: ["s.hyper:1", "'mask_ratio'", "reaches 0.01, which the run refuses"]),
        .set("a width the default heads do not divide", ["hidden_size=7"], ["'hidden_size'", "not a multiple of n_heads 2"], model: "SASRec"),
        .set("heads that do not divide the default width", ["n_heads=3"], ["'n_heads'", "not a multiple of n_heads 3"], model: "SASRec"),
        .set("an attention width the default heads do not divide", ["attention_size=15"], ["'attention_size'", "not a multiple"], model: "AutoInt"),
        HostileCase(name: "a search range the model refuses", files: ["s.hyper": Array("reg_weight uniform -100,0\n".utf8)],
                    arguments: ["tune", "--model", "EASE", "--config", "run.yml", "--trials", "2", "--space", "s.hyper"],
                    mentions: ["s.hyper:1", "'reg_weight'", "reaches -100.0, which the run refuses"]),
        HostileCase(name: "a loguniform range beyond exp's", files: ["s.hyper": Array("reg_weight loguniform 0,1000\n".utf8)],
                    arguments: ["tune", "--model", "EASE", "--config", "run.yml", "--trials", "2", "--space", "s.hyper"],
                    mentions: ["s.hyper:1", "natural logs"]),
        HostileCase(name: "report on a missing folder", arguments: ["report", "nowhere"], mentions: ["nowhere: no such results folder"]),
        .set("empty results_dir", ["results_dir=''"], ["'results_dir'", "must not be empty"]),
        .set("results_dir is a file", ["results_dir=run.yml"], ["run.yml is a file, not a folder"]),
        HostileCase(name: "more memory than allowed", files: ["data/tiny/tiny.inter": Array(HostileCase.sixHundredItems.utf8)],
                    arguments: ["run", "--model", "EASE", "--config", "run.yml", "--set", "memory_limit_mb=1"],
                    mentions: ["'EASE'", "needs an estimated", "600 × 600 float32 Gram matrix", "memory_limit_mb"]),
        HostileCase(name: "a catalogue beyond 32-bit LAPACK", files: ["data/tiny/tiny.inter": Array(HostileCase.tooManyItemsForLapack.utf8)],
                    arguments: ["run", "--model", "EASE", "--config", "run.yml"],
                    mentions: ["'EASE'", "46341 × 46341", "at most 46340 × 46340", "item_inter_num_interval"]),
    ]

    static let dataLeftCases: [HostileCase] = [
        .inter("every user with one interaction", HostileCase.oneInteractionEach, ["'eval_args'", "no user with a test interaction"]),
        .yaml("a count filter that removes everything", "user_inter_num_interval: \"[100,inf)\"\n", ["'user_inter_num_interval'", "removed every interaction"]),
    ]

    static let convertCases: [HostileCase] = [
        .csv("CSV unterminated quote", "user_id,item_id,timestamp\n\"u1,i1,1\nu2,i2,2\n", ["interact.csv:2", "not closed"]),
        .csv("CSV ragged row", "user_id,item_id,timestamp\nu1,i1,1\nu2,i2\n", ["interact.csv:3", "expected 3 fields"]),
        .csv("CSV duplicate header", "user_id,item_id,item_id\nu1,i1,1\n", ["interact.csv:1", "duplicate column name"]),
        .csv("CSV without a user column", "user,item_id,timestamp\nu1,i1,1\n", ["interact.csv:1", "'user_id'", "required column missing"]),
        .csv("CSV empty", "", ["interact.csv:1", "empty file"]),
        .csv("CSV unreadable date", "user_id,item_id,timestamp\nu1,i1,yesterday\n", ["interact.csv:2", "is not a timestamp"],
             extra: ["--time-field", "timestamp"]),
        .csv("CSV value holding a tab", "user_id,item_id,timestamp\nu1,\"i\t1\",1\n", ["interact.csv:2", "contains a tab"]),
        .csv("CSV id given a float type", "user_id,item_id,timestamp\nu1,i1,1\n", ["'item_id:float'", "id column: always token"],
             extra: ["--field", "item_id:float"]),
        .csv("CSV time column asked for but absent", "user_id,item_id,when\nu1,i1,1\n", ["interact.csv:1", "'whn'", "did you mean 'when'"],
             extra: ["--time-field", "whn"]),
        .csv("CSV column mapped twice", "user_id,item_id,timestamp\nu1,i1,1\n", ["'timestamp:token'", "mapped twice"],
             extra: ["--field", "timestamp:float", "--field", "timestamp:token"]),
        HostileCase(name: "CSV item id listed twice", files: ["interact.csv": Array("user_id,item_id\nu1,i1\n".utf8),
                                                               "items.csv": Array("item_id,price\ni1,1.5\ni2,2\ni1,3\n".utf8)],
                    arguments: ["convert", "--inter", "interact.csv", "--item", "items.csv", "--name", "x", "--out", "out/conv"],
                    mentions: ["items.csv:4", "'i1' is listed again (first on line 2)"]),
        HostileCase(name: "convert spec with a key of the wrong type", files: ["interact.csv": Array("user_id,item_id\nu1,i1\n".utf8),
                                                                              "spec.yml": Array("name: x\nfields: {a: b}\n".utf8)],
                    arguments: ["convert", "--spec", "spec.yml", "--inter", "interact.csv", "--out", "out/conv"],
                    mentions: ["spec.yml:2", "'fields'", "must be a list"]),
        .csv("CSV unknown field type", "user_id,item_id,timestamp\nu1,i1,1\n", ["unknown type 'flaot'", "did you mean 'float'"],
             extra: ["--field", "timestamp:flaot"]),
    ]

    @Test func theCatalogueIsLarge() {
        #expect(Self.cases.count >= 40)
        #expect(Set(Self.cases.map(\.name)).count == Self.cases.count)
    }

    @Test(arguments: CatalogueTests.cases)
    func failsWithOneLineAndNoResult(_ c: HostileCase) throws {
        let w = try Workspace()
        for (path, bytes) in c.files {
            let full = w.root + "/" + path
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: full))
        }
        let out = try w.run(c.command)
        #expect(out.status != 0, "\(c.name): exit 0")
        let lines = out.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(c.name): stderr \(out.stderr.prefix(2_000))")
        #expect(out.stderr.count < 2_000, "\(c.name): a \(out.stderr.count)-character error")
        #expect(!out.stderr.contains("Fatal error") && !out.stderr.contains("NSCocoaErrorDomain"))
        for needle in c.mentions { #expect(out.stderr.contains(needle), "\(c.name): stderr lacks '\(needle)': \(out.stderr.prefix(2_000))") }
        #expect(w.allFiles.isEmpty, "\(c.name): left \(w.allFiles)")
    }

    /// A byte-order mark and CRLF line ends are how spreadsheets save text: both read as
    /// the plain file does, to the same metrics.
    @Test func bomAndCRLFReadAsThePlainFile() throws {
        let plain = Workspace.header + Workspace.rows
        var metrics: [String] = []
        for text in [plain, "\u{FEFF}" + plain, plain.replacingOccurrences(of: "\n", with: "\r\n")] {
            let w = try Workspace(inter: text)
            let out = try w.run(["run", "--model", "EASE", "--config", "run.yml", "--no-save", "--quiet"])
            #expect(out.status == 0, "\(out.stderr)")
            metrics.append(out.stdout)
        }
        #expect(metrics[0] == metrics[1] && metrics[0] == metrics[2])
    }

    /// A file-size limit stops the result write (as a full disk would): one line naming the
    /// file, and no record or orphaned per-user file left behind.
    @Test func aFullDiskLeavesNoPartialResult() throws {
        let w = try Workspace()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", "ulimit -f 1 && exec \"$0\" run --model EASE --config run.yml", CLI.binary]
        p.currentDirectoryURL = URL(fileURLWithPath: w.root)
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationReason == .exit && p.terminationStatus == 1, "\(p.terminationReason) \(p.terminationStatus): \(stderr)")
        #expect(stderr.contains("cannot be written (File too large)") && stderr.split(separator: "\n").count == 1, "\(stderr)")
        let leftovers = FileManager.default.enumerator(atPath: w.root + "/out")?.allObjects as? [String] ?? []
        #expect(!leftovers.contains { $0.hasSuffix(".json") || $0.hasSuffix(".tmp") }, "\(leftovers)")
    }
}
