import Foundation
import Testing

/// Context-aware models through the real binary: side files, their failure modes, and the
/// report's families.
@Suite(.serialized) struct ContextCLITests {
    /// The default workspace plus `.user` (rows for u0…u2 only) and `.item` (a token
    /// sequence, empty for i2) files, and a config that loads them.
    func workspace(userColumns: String = "user_id, age", itemColumns: String = "item_id, genre", extra: String = "") throws -> Workspace {
        let config = Workspace.config.replacingOccurrences(of: "load_col: {inter: [user_id, item_id, timestamp]}\n", with: "") + """

            load_col: {inter: [user_id, item_id, timestamp], user: [\(userColumns)], item: [\(itemColumns)]}
            filter_inter_by_user_or_item: false
            epochs: 2
            \(extra)
            """
        let w = try Workspace(config: config)
        let users = "user_id:token\tage:token\theight:float\n" + (0..<3).map { "u\($0)\t\($0 % 2 == 0 ? "young" : "old")\t\(160 + $0)\n" }.joined()
        let items = "item_id:token\tgenre:token_seq\tprice:float\n"
            + (0..<5).map { "i\($0)\t\($0 == 2 ? "" : ($0 < 3 ? "pop rock" : "jazz"))\t\(Double($0) / 2)\n" }.joined()
        try users.write(toFile: w.root + "/data/tiny/tiny.user", atomically: true, encoding: .utf8)
        try items.write(toFile: w.root + "/data/tiny/tiny.item", atomically: true, encoding: .utf8)
        return w
    }

    @Test func fieldsArePrintedAndMissingRowsArePadding() throws {
        let w = try workspace()
        for model in ["FM", "FFM"] {
            let out = try w.run(["run", "--model", model, "--config", "run.yml"])
            #expect(out.status == 0, "\(out.stderr)")
            #expect(out.stdout.contains("fields    user_id (user, token, tiny.inter, 6 values + padding)"), "\(out.stdout)")
            #expect(out.stdout.contains("genre (item, token_seq, tiny.item, 3 values + padding)"))
            #expect(out.stderr.contains("3 of 6 users have no row in tiny.user"), "\(out.stderr)")
        }
    }

    @Test func aLoadColFeatureMissingFromTheFileIsNamed() throws {
        let w = try workspace(userColumns: "user_id, agge")
        let out = try w.run(["run", "--model", "FM", "--config", "run.yml"])
        #expect(out.status != 0)
        #expect(out.stderr.contains("tiny.user") && out.stderr.contains("agge") && out.stderr.contains("age"), "\(out.stderr)")
        #expect(out.stderr.split(separator: "\n").count == 1)
        #expect(w.resultFiles.isEmpty)
    }

    @Test func numericalFeaturesMustNameFloatColumns() throws {
        let token = try workspace(extra: "numerical_features: [age]")
        let out = try token.run(["run", "--model", "FM", "--config", "run.yml"])
        #expect(out.status != 0 && out.stderr.contains("tiny.user") && out.stderr.contains("age") && out.stderr.contains("token"), "\(out.stderr)")
        // A float column listed there becomes a field; unlisted, it is left out with a note.
        let float = try workspace(userColumns: "user_id, age, height", extra: "numerical_features: [height]")
        let listed = try float.run(["run", "--model", "FM", "--config", "run.yml"])
        #expect(listed.status == 0 && listed.stdout.contains("height (user, float, tiny.user, numerical)"), "\(listed.stderr)")
        let unlisted = try workspace(userColumns: "user_id, age, height")
        let left = try unlisted.run(["run", "--model", "FM", "--config", "run.yml"])
        #expect(left.status == 0 && !left.stdout.contains("height (") && left.stderr.contains("height"), "\(left.stderr)")
    }

    /// GRU4RecF's selected_features against the .item file: a misspelt column is named with
    /// the file, a suggestion and the setting that picks a column, a float column needs numerical_features (RecBole's rule),
    /// and items without a row train with padding features and a note that counts them.
    @Test func gru4RecFChecksItsSelectedFeatures() throws {
        let typo = try workspace(extra: "selected_features: [genr]")
        let misspelt = try typo.run(["run", "--model", "GRU4RecF", "--config", "run.yml"])
        #expect(misspelt.status != 0 && misspelt.stderr.contains("tiny.item: 'genr'") && misspelt.stderr.contains("did you mean 'genre'"),
                "\(misspelt.stderr)")
        #expect(misspelt.stderr.split(separator: "\n").count == 1 && typo.resultFiles.isEmpty)
        #expect(misspelt.stderr.contains("e.g. --set 'selected_features=[genre]'"), "the fix, spelt out: \(misspelt.stderr)")
        let float = try workspace(itemColumns: "item_id, genre, price", extra: "selected_features: [genre, price]")
        let unlisted = try float.run(["run", "--model", "GRU4RecF", "--config", "run.yml"])
        #expect(unlisted.status != 0 && unlisted.stderr.contains("'price'") && unlisted.stderr.contains("numerical_features"), "\(unlisted.stderr)")
        let listed = try workspace(itemColumns: "item_id, genre, price", extra: "selected_features: [genre, price]\nnumerical_features: [price]")
        #expect(try listed.run(["run", "--model", "GRU4RecF", "--config", "run.yml"]).status == 0)
        let partial = try workspace()
        try ("item_id:token\tgenre:token_seq\n" + "i0\tpop\ni1\trock\ni2\tjazz\n").write(toFile: partial.root + "/data/tiny/tiny.item", atomically: true,
                                                                                       encoding: .utf8)
        let padded = try partial.run(["run", "--model", "GRU4RecF", "--config", "run.yml", "--set", "selected_features=[genre]"])
        #expect(padded.status == 0 && padded.stderr.contains("2 of 5 items have no row in tiny.item"), "\(padded.stderr)")
        let none = try Workspace(config: Workspace.config + "\nselected_features: [genre]\nepochs: 1")
        let unloaded = try none.run(["run", "--model", "GRU4RecF", "--config", "run.yml"])
        #expect(unloaded.status != 0 && unloaded.stderr.contains("load_col") && unloaded.stderr.contains("tiny.item"), "\(unloaded.stderr)")
    }

    /// A scalar float column is value · e under every pooling mode, as RecBole pools only
    /// sequences (max pooling once gave i0, whose price is 0, an empty bag's −1e9); max pooling of
    /// a float_seq column (RecBole: the largest value × e per dimension) is refused, not approximated.
    @Test func gru4RecFPoolsNoScalarFloat() throws {
        let metrics = try ["sum", "mean", "max"].map { mode in
            let w = try workspace(itemColumns: "item_id, price", extra: "selected_features: [price]\nnumerical_features: [price]\npooling_mode: \(mode)")
            let out = try w.run(["run", "--model", "GRU4RecF", "--config", "run.yml"])
            #expect(out.status == 0, "\(mode): \(out.stderr)")
            return out.stdout.split(separator: "\n").filter { $0.hasPrefix("  ndcg") || $0.hasPrefix("  recall") || $0.hasPrefix("  mrr") }
        }
        #expect(!metrics[0].isEmpty && metrics[1] == metrics[0] && metrics[2] == metrics[0], "\(metrics)")
        let w = try workspace(itemColumns: "item_id, prices", extra: "selected_features: [prices]\nnumerical_features: [prices]\npooling_mode: max")
        try ("item_id:token\tprices:float_seq\n" + (0..<5).map { "i\($0)\t\($0) 1.5\n" }.joined())
            .write(toFile: w.root + "/data/tiny/tiny.item", atomically: true, encoding: .utf8)
        let refused = try w.run(["run", "--model", "GRU4RecF", "--config", "run.yml"])
        #expect(refused.status != 0 && refused.stderr.contains("pooling_mode") && refused.stderr.contains("prices"), "\(refused.stderr)")
    }

    /// A float_seq column: FM reads it (its first-order term the mean of the values, as RecBole's);
    /// FwFM refuses it with the column's name, where RecBole 1.2.1 fails in its pair loop.
    @Test func floatSequencesAreReadOrRefused() throws {
        let w = try workspace(itemColumns: "item_id, sizes", extra: "numerical_features: [sizes]")
        try ("item_id:token\tsizes:float_seq\n" + (0..<5).map { "i\($0)\t\($0) 1.5\n" }.joined())
            .write(toFile: w.root + "/data/tiny/tiny.item", atomically: true, encoding: .utf8)
        let fm = try w.run(["run", "--model", "FM", "--config", "run.yml"])
        #expect(fm.status == 0, "\(fm.stderr)")
        let fwfm = try w.run(["run", "--model", "FwFM", "--config", "run.yml"])
        #expect(fwfm.status != 0 && fwfm.stderr.contains("float_seq column sizes") && fwfm.stderr.contains("tiny.item"), "\(fwfm.stderr)")
        #expect(fwfm.stderr.split(separator: "\n").count == 1)
    }

    @Test func theReportGroupsRowsByFamily() throws {
        let w = try workspace()
        #expect(try w.run(["sweep", "--config", "run.yml", "--models", "FM,Pop,EASE", "--quiet"]).status == 0)
        let md = try w.run(["report", "out"]).stdout
        let lines = md.split(separator: "\n").filter { $0.hasPrefix("| ") && !$0.hasPrefix("| model") }
        let families = lines.map { line in line.contains("| context-aware |") ? "context-aware" : "general" }
        #expect(families == ["general", "general", "context-aware"], "\(md)")
        let csv = try w.run(["report", "out", "--format", "csv"]).stdout
        #expect(csv.hasPrefix("dataset,history_mask,model,label,family,type,"))
        #expect(csv.contains(",FM,FM,context-aware,factorisation,"))
    }
}
