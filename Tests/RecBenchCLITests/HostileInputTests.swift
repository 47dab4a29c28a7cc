import Foundation
import Testing

/// Inputs found accepted silently or crashing (issue 16's first findings): each now fails
/// with one stderr line naming the place, a non-zero exit and no result file.
extension CLITests {
    static let header = Workspace.header, rows = Workspace.rows

    @Test func aTimestampBeyondTheFloatRangeIsRefused() throws {
        let w = try Workspace(inter: Self.header + Self.rows + "u1\ti4\t1e400\n")
        try expectFailure(w, ["run", "--model", "Pop", "--config", "run.yml"], mentions: ["tiny.inter:", "'timestamp'", "outside the range"])
    }

    @Test func aNulByteInATokenIsRefused() throws {
        let w = try Workspace(inter: Self.header + Self.rows + "u\u{0}1\ti4\t99\n")
        try expectFailure(w, ["run", "--model", "Pop", "--config", "run.yml"], mentions: ["tiny.inter:", "'user_id'", "NUL"])
    }

    @Test func emptyIdsAreRefused() throws {
        for row in ["\ti4\t99\n", "u1\t\t99\n"] {
            let w = try Workspace(inter: Self.header + Self.rows + row)
            try expectFailure(w, ["run", "--model", "Pop", "--config", "run.yml"], mentions: ["tiny.inter:", "empty id"])
        }
    }

    @Test func aHeaderOnlyFileNamesTheFile() throws {
        let w = try Workspace(inter: Self.header)
        try expectFailure(w, ["run", "--model", "Pop", "--config", "run.yml"], mentions: ["tiny.inter", "no interaction rows"])
    }

    @Test func contradictoryOrEmptySettingsAreRefused() throws {
        let w = try Workspace()
        for (set, key) in [("ITEM_ID_FIELD=user_id", "'ITEM_ID_FIELD'"), ("results_dir=''", "'results_dir'"),
                           ("checkpoint_dir=''", "'checkpoint_dir'"), ("data_path=''", "'data_path'"),
                           ("topk=[2,1000000000]", "larger than the catalogue")] {
            try expectFailure(w, ["run", "--model", "Pop", "--config", "run.yml", "--set", set], mentions: [key])
        }
        let sweep = try w.run(["sweep", "--config", "run.yml", "--models", " , "])
        #expect(sweep.status != 0 && sweep.stderr.contains("--models is empty"), "\(sweep.stderr)")
        #expect(w.allFiles.isEmpty)
    }

    @Test func aFileWhereAFolderShouldBeIsNamed() throws {
        let w = try Workspace()
        try "not a folder".write(toFile: w.root + "/taken", atomically: true, encoding: .utf8)
        let run = try w.run(["run", "--model", "Pop", "--config", "run.yml", "--set", "results_dir=taken"])
        #expect(run.status != 0 && run.stderr.contains("taken is a file, not a folder"), "\(run.stderr)")
        #expect(!run.stderr.contains("NSCocoaErrorDomain"))
        #expect(try w.run(["run", "--model", "Pop", "--config", "run.yml"]).status == 0)
        let report = try w.run(["report", "out", "--format", "html", "-o", "taken/page.html"])
        #expect(report.status != 0 && report.stderr.contains("taken is a file, not a folder"), "\(report.stderr)")
    }

    @Test func sparsityIsNeverNegative() throws {
        // One item bought ten times by one user and once by another: more rows than cells.
        let rows = (0..<10).map { "u0\ti0\t\($0)\n" }.joined() + "u1\ti0\t5\n"
        let config = Workspace.config.replacingOccurrences(of: "[0.6, 0.2, 0.2]", with: "[0.8, 0.1, 0.1]")
            .replacingOccurrences(of: "topk: [2]", with: "topk: [1]").replacingOccurrences(of: "MRR@2", with: "MRR@1")
        let w = try Workspace(inter: Self.header + rows, config: config)
        let out = try w.run(["run", "--model", "Pop", "--config", "run.yml", "--no-save"])
        #expect(out.stdout.contains("sparsity 0.00%"), "\(out.stdout)\(out.stderr)")
    }
}
