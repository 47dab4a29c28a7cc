import ArgumentParser
struct Bench: ParsableCommand { static let configuration = CommandConfiguration(abstract: "placeholder"); func run() {} }
