def fibonacci(count: int) -> list[int]:
    """The first `count` Fibonacci numbers."""
    numbers = [0, 1]
    while len(numbers) < count:
        numbers.append(numbers[-1] + numbers[-2])
    return numbers[:count]


print(fibonacci(10))  # 0 1 1 2 3 5 8 13 21 34
