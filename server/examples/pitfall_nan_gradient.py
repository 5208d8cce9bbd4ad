import torch

# a "safe" square root: torch.where sends 0 where x <= 0
x = torch.tensor([-1.0, 0.0, 4.0], requires_grad=True)
safe_sqrt = torch.where(x > 0, torch.sqrt(x), torch.zeros_like(x))
loss = safe_sqrt.sum()
loss.backward()

print(loss.item())  # 2.0: the loss is finite
print(x.grad)       # but the gradient is not
