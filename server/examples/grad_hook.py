import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 3
# runs on y's gradient during backward(); what it returns flows on
y.register_hook(lambda grad: grad * 10)
z = (y ** 2).sum()
z.backward()
print(x.grad)  # 10 times [18, 36], the gradient without the hook
