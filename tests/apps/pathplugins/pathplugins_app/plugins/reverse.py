def run(text):
    return text[::-1]
