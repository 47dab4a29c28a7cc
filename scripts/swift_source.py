"""Reading Swift sources as the checks need them: code without comments and string literals."""
import re


def code(path):
    """The file without comments and string literals."""
    text = open(path, encoding='utf-8').read()
    text = re.sub(r'/\*[\s\S]*?\*/', '', text)
    text = re.sub(r'"""[\s\S]*?"""', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    return re.sub(r'//[^\n]*', '', text)
