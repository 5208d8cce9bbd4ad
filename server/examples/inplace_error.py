import torch

a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a.sigmoid()        # sigmoid saves its output for backward
b.mul_(2)              # an in-place change to that saved output
b.sum().backward()     # autograd notices the version change and refuses
