import Foundation
import Testing
import RecBenchCLI
import RecBenchCore

/// The documentation's generated tables: `recbench keys --markdown` in docs/configuration.md,
/// `recbench models --markdown` in README.md. Regenerate, never hand-edit.
struct ReadmeTablesTests {
    static func document(_ path: String) -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return (try? String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)) ?? ""
    }

    @Test func theModelTableIsTheGeneratedOne() {
        #expect(Self.document("README.md").contains("<!-- recbench models --markdown -->\n" + ModelRegistry.markdownTable() + "\n<!-- end -->"),
                "README's model table is stale: run `recbench models --markdown` and paste it between its markers")
    }

    @Test func theConfigTablesAreTheGeneratedOnes() {
        let configuration = Self.document("docs/configuration.md")
        #expect(configuration.contains("<!-- recbench keys --markdown: used -->\n" + Keys.usedTable() + "\n<!-- end -->"),
                "docs/configuration.md's key table is stale: run `recbench keys --markdown` and paste the first table")
        #expect(configuration.contains("<!-- recbench keys --markdown: recbole -->\n" + Keys.recBoleTable() + "\n<!-- end -->"),
                "docs/configuration.md's RecBole table is stale: run `recbench keys --markdown` and paste the second table")
    }
}
