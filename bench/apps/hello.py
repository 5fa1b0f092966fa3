"""The hello-world workload of bench/peers.py: print one line and exit."""


def main():
    print("hello, world")


if __name__ == "__main__":
    main()
