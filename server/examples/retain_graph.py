import torch

x = torch.tensor(2.0, requires_grad=True)
y = x ** 3
y.backward(retain_graph=True)   # keep the graph's saved tensors for a second pass
print("after the first backward:", x.grad.item())
y.backward()                    # allowed now; .grad accumulates to 12 + 12
print("after the second backward:", x.grad.item())
