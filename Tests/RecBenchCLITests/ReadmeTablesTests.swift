import Foundation
import Testing
import RecBenchCLI

/// The README's config tables are `recbench keys --markdown`: regenerate, never hand-edit.
struct ReadmeTablesTests {
    static let readme: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return (try? String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)) ?? ""
    }()

    @Test func theConfigTablesAreTheGeneratedOnes() {
        #expect(Self.readme.contains("<!-- recbench keys --markdown: used -->\n" + Keys.usedTable() + "\n<!-- end -->"),
                "README's key table is stale: run `recbench keys --markdown` and paste the first table")
        #expect(Self.readme.contains("<!-- recbench keys --markdown: recbole -->\n" + Keys.recBoleTable() + "\n<!-- end -->"),
                "README's RecBole table is stale: run `recbench keys --markdown` and paste the second table")
    }
}
