raise ImportError("this model cannot be imported")
