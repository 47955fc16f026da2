from greeter import greet, farewell

if __name__ == "__main__":
    print(greet("world"))
    print(farewell("world"))
