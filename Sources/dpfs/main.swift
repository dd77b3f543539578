print("dpfs")
